package org.ptorun.testing;

/**
 * The emulated device driver's own accounting ({@code PtoEmuStats}), process-wide live
 * counts over every device it has open. Closing a device takes all of its share out of
 * every counter, so once the chips a test opened are closed, the value equals the one
 * taken before they were opened; {@code threads} included (the driver's threads end
 * with their device).
 *
 * @param devicesOpen devices open
 * @param memoryCommitted bytes of device memory allocated
 * @param allocations live allocations
 * @param streams live streams
 * @param images loaded device images
 * @param hostRegistrations live host views of device memory
 * @param threads driver threads alive (stream engines and participation threads)
 * @param commRanks live communication ranks (joined, not left)
 * @param commWindowSets live window allocations of those ranks
 */
public record DriverStats(long devicesOpen, long memoryCommitted, long allocations, long streams, long images,
                          long hostRegistrations, long threads, long commRanks, long commWindowSets) {
}
