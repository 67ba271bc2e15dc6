package org.ptorun.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ptorun.CallConfig;
import org.ptorun.NativeRun;
import org.ptorun.TaskArgs;
import org.ptorun.testlog.LogCapture;
import org.slf4j.event.Level;

/** {@link WorkerTimeline} without a chip: its bound, its one write, a write that fails. */
class WorkerTimelineBoundTest {

    private static void finish(WorkerTimeline timeline, long id) {
        RunTicket t = new RunTicket(id, id, 0, 0, 7, new TaskArgs(), CallConfig.DEFAULT, 10 * id, Runnable::run);
        long s = 10 * id;
        RunTimings timings = new RunTimings(s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7);
        timeline.runFinished(t, new RunResult(new NativeRun(0, 1, 1, id, id), 0, id, timings, 0, List.of()), null);
    }

    @Test
    void runsBeyondTheBoundAreDroppedAndCountedAndTheFileIsWrittenOnce(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("t.json");
        WorkerTimeline timeline = new WorkerTimeline(file, 2);
        for (long id = 1; id <= 3; id++) {
            finish(timeline, id);
        }
        try (LogCapture logs = LogCapture.open()) {
            timeline.writeOnce();
            assertThat(logs.messages(Level.WARN)).filteredOn(m -> m.contains("1 runs beyond the bound of 2"))
                    .hasSize(1);
        }
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        assertThat(root.get("metadata").get("runs").asInt()).isEqualTo(2);
        assertThat(root.get("metadata").get("droppedRuns").asInt()).isEqualTo(1);
        assertThat(root.get("metadata").get("maxRuns").asInt()).isEqualTo(2);
        long prepares = 0;
        for (JsonNode e : root.get("traceEvents")) {
            if (e.get("name").asText().equals("prepare")) {
                prepares++;
                assertThat(e.get("args").get("dispatchId").asLong()).isIn(1L, 2L);
            }
        }
        assertThat(prepares).isEqualTo(2);

        Files.writeString(file, "replaced");
        finish(timeline, 4);
        timeline.writeOnce();
        assertThat(Files.readString(file)).as("written once").isEqualTo("replaced");
    }

    @Test
    void aFileThatCannotBeWrittenIsLoggedNotThrown(@TempDir Path dir) throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("plain"), "x");
        WorkerTimeline timeline = new WorkerTimeline(notADirectory.resolve("t.json"), 10);
        finish(timeline, 1);
        try (LogCapture logs = LogCapture.open()) {
            assertThatCode(timeline::writeOnce).doesNotThrowAnyException();
            assertThat(logs.messages(Level.WARN)).filteredOn(m -> m.contains("could not write the Worker timeline"))
                    .hasSize(1);
        }
    }
}
