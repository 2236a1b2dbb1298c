/**
 * A Java twin of rdma-core 44's {@code rstream} over the RDMA channels ({@link JavaRstream}), so that interop tests
 * can run the C tool against it in both directions: the same options, the same tests, the same 16-byte sync, the
 * same {@code -T v} byte pattern and the same output lines.
 *
 * <p>To run it outside JUnit, build the test classes and the module's class path from the repository root:
 * <pre>
 * mvn -o -q -pl interop-tests -am test-compile dependency:build-classpath \
 *     -Dmdep.includeScope=test -Dmdep.outputFile=target/rstream.classpath
 * java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED \
 *     -cp interop-tests/target/test-classes:$(cat interop-tests/target/rstream.classpath) \
 *     io.rdmachannel.interop.rstream.JavaRstream -b 127.0.0.1 -S 65536 -C 100 -I 100 -T v -T b
 * </pre>
 * The reactor's own modules then appear on that class path as their {@code target/classes} directories.
 */
package io.rdmachannel.interop.rstream;
