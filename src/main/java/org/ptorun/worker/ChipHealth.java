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
 */
public record ChipHealth(int deviceId, boolean healthy, long outstanding, long succeeded, long failed,
        long committedDeviceMemory) {
}
