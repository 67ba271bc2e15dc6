package org.ptorun.worker;

/**
 * One chip of a {@link Worker}, as {@link Worker#health()} reports it.
 *
 * @param deviceId the chip's device id
 * @param healthy false once the chip was poisoned (it takes no more runs) or closed
 * @param outstanding runs assigned to the chip and not yet finalized
 * @param succeeded runs finalized successfully on the chip
 * @param failed runs that completed exceptionally on the chip (cancelled ones included)
 * @param committedDeviceMemory bytes of device memory committed on the chip now; once the
 *        Worker is closed, what was committed after its last run was finalized, just before
 *        the chip was closed (so a run that leaked device memory shows here)
 * @param processId the pid of the chip's chip host in process isolation; 0 in process
 * @param restarts how often the Worker restarted the chip ({@link RestartPolicy})
 * @param down why the chip is unhealthy and stays down (e.g. its last crash and that the
 *        policy allows no more restarts); "" while it is healthy
 */
public record ChipHealth(int deviceId, boolean healthy, long outstanding, long succeeded, long failed,
        long committedDeviceMemory, long processId, int restarts, String down) {
}
