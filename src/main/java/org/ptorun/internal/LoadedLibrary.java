package org.ptorun.internal;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.nio.file.Path;

/** One opened host-runtime library and its bound {@link NativeApi}. */
public final class LoadedLibrary {

    private final NativeLibrary library;
    private final Class<?> bindings;
    private final NativeApi api;

    LoadedLibrary(NativeLibrary library, Class<?> bindings, NativeApi api) {
        this.library = library;
        this.bindings = bindings;
        this.api = api;
    }

    public NativeApi api() {
        return api;
    }

    /** The file the dynamic loader opened. */
    public Path file() {
        return library.getFile() == null ? Path.of(library.getName()) : library.getFile().toPath();
    }

    /** Unbinds the natives and closes the library (used when admission refuses it). */
    public void close() {
        Native.unregister(bindings);
        library.close();
    }
}
