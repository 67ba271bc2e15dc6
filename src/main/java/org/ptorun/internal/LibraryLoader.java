package org.ptorun.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Map;
import org.ptorun.LibraryLoadException;

/**
 * Opens a library from the class path ({@code linux-x86-64/<file>}: in place from a
 * directory, else from the process's private folder, see {@link NativeFolder}) or, when
 * no such resource exists, {@code jna.library.path}, and binds a private copy of
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
        } catch (ExceptionInInitializerError | NoClassDefFoundError | IllegalCallerException e) {
            library.close();
            throw nativeAccessRefused(fileName, e);
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
        String resource;
        Path file;
        try {
            resource = resourcePath(fileName);
            file = NativeFolder.libraryFile(fileName);
        } catch (ExceptionInInitializerError | NoClassDefFoundError | IllegalCallerException e) {
            throw nativeAccessRefused(fileName, e);
        }
        try {
            return NativeLibrary.getInstance(file == null ? name : file.toString(),
                    Map.of(Library.OPTION_OPEN_FLAGS, RTLD_NOW | RTLD_LOCAL));
        } catch (UnsatisfiedLinkError e) {
            throw new LibraryLoadException("cannot load " + fileName + ": "
                    + (file != null
                            ? "the resource " + resource + " (loaded from " + file
                                    + ") is on the class path but the dynamic loader refused it"
                            : "no resource " + resource + " on the class path and not found on jna.library.path="
                                    + System.getProperty("jna.library.path"))
                    + ". Run with -Djna.debug_load=true to see every place JNA looked;"
                    + " set -D" + NativeFolder.TMPDIR_PROPERTY + "=<writable dir> if the extraction folder's"
                    + " file system refuses executable mappings (noexec). Cause: " + e.getMessage(), e);
        } catch (ExceptionInInitializerError | NoClassDefFoundError | IllegalCallerException e) {
            throw nativeAccessRefused(fileName, e);
        }
    }

    /**
     * JNA could not initialise: on Java 24+ with {@code --illegal-native-access=deny} (the
     * default of a later Java), loading a native library from a module without native
     * access fails inside {@code com.sun.jna.Native}'s static initialiser.
     */
    static LibraryLoadException nativeAccessRefused(String fileName, Throwable e) {
        Throwable root = e;
        boolean denied = e instanceof IllegalCallerException;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
            denied |= root instanceof IllegalCallerException;
        }
        if (!denied) {
            return new LibraryLoadException("cannot load " + fileName + ": JNA is missing or could not initialise ("
                    + root + "); put jna-<version>.jar on the class path (or module path)", e);
        }
        return new LibraryLoadException("cannot load " + fileName + ": JNA could not initialise (" + root
                + "). Java refuses native access to code that was not granted it: run java with "
                + enableNativeAccessFlag() + " (Java 22+; without it Java 21-24 only warn, and"
                + " --illegal-native-access=deny refuses)", e);
    }

    /**
     * The flag granting native access to the module that calls the restricted methods:
     * JNA's ({@code com.sun.jna.Native} calls {@code System.load}), {@code ALL-UNNAMED} on
     * the class path, {@code com.sun.jna} on the module path (measured with
     * {@code --illegal-native-access=deny} on Java 25: granting ptorun's module alone does
     * not help, JNA's alone does).
     */
    public static String enableNativeAccessFlag() {
        String module = "ALL-UNNAMED";
        try {
            Class<?> jna = Class.forName("com.sun.jna.Native", false, LibraryLoader.class.getClassLoader());
            module = moduleName(jna.getModule());
        } catch (ClassNotFoundException | LinkageError e) {
            // JNA missing: its load fails on its own
        }
        return "--enable-native-access=" + module;
    }

    private static String moduleName(Module module) {
        return module.isNamed() ? module.getName() : "ALL-UNNAMED";
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
