package org.ptorun;

/**
 * {@code PTO_ERR_ORCHESTRATION}: the callable's orchestration function reported failure.
 */
public final class OrchestrationException extends PtoRunException {

    private static final long serialVersionUID = 1L;

    public OrchestrationException(String description, int code, String nativeMessage, NativeRun run) {
        super(description, code, nativeMessage, run);
    }
}
