package org.ptorun.hosts;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.ptorun.ChipWorker;
import org.ptorun.CommException;
import org.ptorun.CommGroup;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;

/**
 * The child of {@link NoGlooE2ETest}, whose libraries sit beside a multi-host plugin that
 * cannot load: for every variant, a group across hosts must be refused with a
 * {@link CommException} naming the package, and a group on one host must still work.
 * Prints {@code REFUSED <variant> <message>} and {@code LOCAL <variant> ok}; exit 0 when
 * every variant got both, 1 otherwise.
 */
public final class NoGlooMain {

    private NoGlooMain() {
    }

    public static void main(String[] args) throws Exception {
        int status = 0;
        Path dir = Files.createTempDirectory("nogloo");
        for (Variant variant : Variant.all()) {
            try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
                String rootInfo = CommGroup.newRootInfo(new InetSocketAddress(InetAddress.getLoopbackAddress(), 9));
                try (CommGroup g = CommGroup.join(chip, 0, 2, rootInfo, Duration.ofSeconds(5))) {
                    System.out.println("JOINED " + variant + " (expected a refusal)");
                    status = 1;
                } catch (CommException e) {
                    System.out.println("REFUSED " + variant + " " + e.getMessage());
                }
                try (CommGroup g = CommGroup.open(List.of(chip), dir.resolve(variant.toString().replace('/', '_')))) {
                    g.allocWindows(4096);
                    g.barrier();
                    System.out.println("LOCAL " + variant + " ok");
                }
            } catch (Throwable t) {
                t.printStackTrace();
                status = 1;
            }
        }
        System.out.flush();
        System.exit(status);
    }
}
