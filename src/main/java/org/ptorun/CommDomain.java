package org.ptorun;

import java.util.List;

/**
 * Windows of a sub-domain of a {@link CommGroup} ({@link CommRank#allocDomainWindows}):
 * its ranks (group ranks, in domain order), this rank's index among them, the device
 * context collective kernels take, and every member's window as this chip addresses it
 * ({@code null} for a member on another host: its window is not addressable from here).
 */
public record CommDomain(long allocationId, int[] ranks, int domainRank, long deviceContext, long windowSize,
                         List<DeviceBuffer> windows) {

    /** This rank's window of the domain. */
    public DeviceBuffer window() {
        return windows.get(domainRank);
    }
}
