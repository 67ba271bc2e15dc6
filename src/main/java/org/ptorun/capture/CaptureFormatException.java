package org.ptorun.capture;

/**
 * A capture file that cannot be read: not a capture, another format version, truncated,
 * or corrupted (its checksum or a length does not match). The message names the file
 * and what is wrong with it.
 */
public final class CaptureFormatException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public CaptureFormatException(String message) {
        super(message);
    }

    public CaptureFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
