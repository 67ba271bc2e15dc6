package org.ptorun.internal;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.ptorun.LibraryLoadException;

/**
 * Where the native files of this process live on disk (docs/java.md, Loading).
 *
 * <p>A library whose resource {@code linux-x86-64/<file>} is a plain file (a directory on
 * the class path, such as {@code target/classes}) is loaded in place: its companions sit
 * next to it. A library inside a jar is extracted, with its companions (the emulated driver
 * {@code libptorun_emudrv.so} and the multi-host plugin {@code libptorun_gloo.so}), under its
 * real name into <b>one private folder per
 * process</b> ({@code ptorun-<pid>-<random>} under {@code ptorun.tmpdir}, default
 * {@code java.io.tmpdir}; created {@code rwx------}, deleted when the JVM exits), so the
 * onboard runners find the driver next to themselves exactly as in the build tree.
 *
 * <p>{@code -Dptorun.driver=<file>} pins the driver: the libraries are then always loaded
 * from the private folder, which holds {@code libptorun_driver.so}, a symbolic link to that
 * file; an onboard runner loads a {@code libptorun_driver.so} next to itself before it
 * looks at {@code PTORUN_DRIVER} (platform/onboard/onboard_driver.c). No environment
 * variable is set: the choice reaches the native side through the file system.
 */
public final class NativeFolder {

    /** The system property pinning the device driver the onboard runners load. */
    public static final String DRIVER_PROPERTY = "ptorun.driver";
    /** The system property naming the parent of the private folder. */
    public static final String TMPDIR_PROPERTY = "ptorun.tmpdir";
    /** The link an onboard runner prefers to every other driver (the pin of {@link #DRIVER_PROPERTY}). */
    public static final String PINNED_DRIVER_FILE_NAME = "libptorun_driver.so";

    /**
     * What a library finds next to itself: the emulated driver (onboard) and the multi-host
     * plugin, which a library loads only for a group across hosts (docs/communication.md).
     */
    static final List<String> COMPANIONS = List.of(EmulatedDriverLibrary.BUNDLED_FILE_NAME, "libptorun_gloo.so");

    private static final Object LOCK = new Object();
    private static Path folder;

    private NativeFolder() {
    }

    /** The value of {@code -Dptorun.driver}, or null when unset or empty. */
    public static String pinnedDriver() {
        String value = System.getProperty(DRIVER_PROPERTY);
        return value == null || value.isEmpty() ? null : value;
    }

    /**
     * The file on disk to load {@code fileName} from, or null when the class path holds no
     * resource {@code linux-x86-64/<fileName>} (then JNA searches {@code jna.library.path}
     * and the system).
     *
     * @throws LibraryLoadException when the private folder, a copy or the pin cannot be made
     */
    public static Path libraryFile(String fileName) {
        URL url = resource(fileName);
        if (url == null) {
            return null;
        }
        String driver = pinnedDriver();
        if (driver == null && "file".equals(url.getProtocol())) {
            try {
                return Path.of(url.toURI());
            } catch (URISyntaxException | IllegalArgumentException e) {
                // not a plain path: extract it
            }
        }
        synchronized (LOCK) {
            Path dir = folder();
            if (driver != null) {
                pin(dir, driver);
            }
            Path file = extract(dir, fileName, url);
            for (String name : COMPANIONS) {
                URL companion = resource(name);
                if (companion != null) {
                    extract(dir, name, companion);
                }
            }
            return file;
        }
    }

    /** The private folder, when this process made one (null before any extraction). */
    public static Path folderIfCreated() {
        synchronized (LOCK) {
            return folder;
        }
    }

    private static URL resource(String fileName) {
        ClassLoader loader = NativeFolder.class.getClassLoader();
        return loader == null ? null : loader.getResource(LibraryLoader.resourcePath(fileName));
    }

    private static Path folder() {
        if (folder != null) {
            return folder;
        }
        Path parent = Path.of(System.getProperty(TMPDIR_PROPERTY, System.getProperty("java.io.tmpdir")));
        try {
            Files.createDirectories(parent);
            Path dir = Files.createTempDirectory(parent, "ptorun-" + ProcessHandle.current().pid() + "-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(dir), "ptorun-native-folder-cleanup"));
            folder = dir;
            return dir;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            throw new LibraryLoadException("cannot create the private folder for the native libraries under "
                    + parent + " (set -D" + TMPDIR_PROPERTY + "=<writable dir on a file system that allows"
                    + " executable mappings>): " + e, e);
        }
    }

    private static Path extract(Path dir, String fileName, URL url) {
        Path target = dir.resolve(fileName);
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            return target;
        }
        Path partial = dir.resolve(fileName + ".part");
        try (InputStream in = url.openStream()) {
            Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(partial, PosixFilePermissions.fromString("r-x------"));
            Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
            return target;
        } catch (IOException | UnsupportedOperationException e) {
            throw new LibraryLoadException("cannot extract " + url + " to " + target
                    + " (set -D" + TMPDIR_PROPERTY + "=<writable dir>): " + e, e);
        }
    }

    private static void pin(Path dir, String driver) {
        Path link = dir.resolve(PINNED_DRIVER_FILE_NAME);
        Path target = Path.of(driver).toAbsolutePath().normalize();
        if (Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
            try {
                if (Files.readSymbolicLink(link).equals(target)) {
                    return;
                }
                throw new LibraryLoadException("-D" + DRIVER_PROPERTY + "=" + driver + ": the libraries of this"
                        + " process already load the driver " + Files.readSymbolicLink(link)
                        + "; the property is read when the first library loads and cannot change afterwards");
            } catch (IOException e) {
                throw new LibraryLoadException("cannot read " + link + ": " + e, e);
            }
        }
        if (!Files.isRegularFile(target)) {
            throw new LibraryLoadException("cannot load the device driver -D" + DRIVER_PROPERTY + "=" + driver
                    + ": no such file " + target);
        }
        try {
            Files.createSymbolicLink(link, target);
        } catch (FileAlreadyExistsException e) {
            // made concurrently under the same lock is impossible; a stale one was checked above
        } catch (IOException | UnsupportedOperationException e) {
            throw new LibraryLoadException("cannot link " + link + " to the driver " + target + " (-D"
                    + DRIVER_PROPERTY + "): " + e, e);
        }
    }

    private static void delete(Path dir) {
        List<Path> paths = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(paths::add);
        } catch (IOException e) {
            return;
        }
        for (Path p : paths) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException e) {
                // best effort at exit
            }
        }
    }
}
