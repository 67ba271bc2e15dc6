package org.ptorun.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.util.Map;
import org.ptorun.LibraryLoadException;

/**
 * Opens a library from the classpath ({@code linux-x86-64/<file>}, extracted by JNA when
 * it sits in a jar) or {@code jna.library.path}, and binds a private copy of
 * {@link DirectBindings} to it, resolving every symbol up front.
 */
public final class LibraryLoader {

    private static final int RTLD_NOW = 0x2;
    private static final int RTLD_LOCAL = 0x0;

    private LibraryLoader() {
    }

    /** The classpath resource a library file is expected at. */
    public static String resourcePath(String fileName) {
        return Platform.RESOURCE_PREFIX + "/" + fileName;
    }

    /**
     * Loads {@code lib<name>.so} and binds every contract symbol.
     *
     * @throws LibraryLoadException naming the file, the resource path and what helps
     */
    public static LoadedLibrary load(String name, String fileName) {
        NativeLibrary library = open(name, fileName);
        Class<?> bindings = new BindingsClassLoader(name).bindingsClass();
        try {
            Native.register(bindings, library);
        } catch (UnsatisfiedLinkError | IllegalArgumentException e) {
            library.close();
            throw new LibraryLoadException(fileName + " (" + library.getFile()
                    + ") does not export the whole ptorun contract: " + e.getMessage(), e);
        }
        try {
            NativeApi api = (NativeApi) bindings.getConstructor().newInstance();
            return new LoadedLibrary(library, bindings, api);
        } catch (ReflectiveOperationException e) {
            Native.unregister(bindings);
            library.close();
            throw new IllegalStateException("cannot instantiate the bindings of " + fileName, e);
        }
    }

    private static NativeLibrary open(String name, String fileName) {
        String resource = resourcePath(fileName);
        try {
            return NativeLibrary.getInstance(name, Map.of(Library.OPTION_OPEN_FLAGS, RTLD_NOW | RTLD_LOCAL));
        } catch (UnsatisfiedLinkError e) {
            boolean onClasspath = LibraryLoader.class.getClassLoader().getResource(resource) != null;
            throw new LibraryLoadException("cannot load " + fileName + ": "
                    + (onClasspath
                            ? "the resource " + resource + " is on the classpath but the dynamic loader refused it"
                            : "no resource " + resource + " on the classpath and not found on jna.library.path="
                                    + System.getProperty("jna.library.path"))
                    + ". Run with -Djna.debug_load=true to see every place JNA looked;"
                    + " set -Djna.tmpdir=<writable dir> if extraction from the jar fails. Cause: "
                    + e.getMessage(), e);
        }
    }

    /**
     * Defines its own copy of {@link DirectBindings} (JNA registers natives per class, so
     * each library needs a class of its own) and delegates everything else to the parent.
     */
    private static final class BindingsClassLoader extends ClassLoader {

        private static final String BINDINGS = DirectBindings.class.getName();

        BindingsClassLoader(String libraryName) {
            super("ptorun-bindings-" + libraryName, LibraryLoader.class.getClassLoader());
        }

        Class<?> bindingsClass() {
            try {
                return loadClass(BINDINGS, true);
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        protected Class<?> loadClass(String className, boolean resolve) throws ClassNotFoundException {
            if (!BINDINGS.equals(className)) {
                return super.loadClass(className, resolve);
            }
            synchronized (getClassLoadingLock(className)) {
                Class<?> c = findLoadedClass(className);
                if (c == null) {
                    byte[] bytes = classBytes(className);
                    c = defineClass(className, bytes, 0, bytes.length);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }

        private byte[] classBytes(String className) throws ClassNotFoundException {
            String resource = className.replace('.', '/') + ".class";
            try (InputStream in = getParent().getResourceAsStream(resource)) {
                if (in == null) {
                    throw new ClassNotFoundException(className);
                }
                return in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
