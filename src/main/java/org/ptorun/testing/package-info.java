/**
 * Testing your service against device faults: {@link org.ptorun.testing.EmulatedFaults}
 * injects the faults of the emulated device driver that the onboard libraries load and
 * reads its resource accounting. See docs/testing.md.
 */
package org.ptorun.testing;
