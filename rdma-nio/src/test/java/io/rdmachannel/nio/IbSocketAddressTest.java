package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.HexFormat;
import java.util.SplittableRandom;

import io.rdmachannel.channel.IbSocketAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class IbSocketAddressTest {
    private static final byte[] GID = HexFormat.of().parseHex("fe800000000000000002c903000ab1c2");

    @Test
    void shouldPrintAndParseThePortForm() {
        final IbSocketAddress address = IbSocketAddress.of(GID, 7471);

        assertEquals("ib:[fe80::2:c903:a:b1c2]:7471", address.toString());
        assertEquals(address, IbSocketAddress.parse("ib:[fe80::2:c903:a:b1c2]:7471"));
        assertEquals(7471, address.port());
        assertTrue(address.hasPort());
        assertEquals((0x0106L << 16) | 7471, address.serviceId());
        assertEquals(IbSocketAddress.DEFAULT_PKEY, address.pkey());
        assertArrayEquals(GID, address.gid());
    }

    @Test
    void shouldPrintPkeyAndServiceIdParameters() {
        assertEquals("ib:[fe80::2:c903:a:b1c2]:80?pkey=0x8001",
            IbSocketAddress.of(GID, 0x8001, IbSocketAddress.serviceIdOf(80)).toString());
        final IbSocketAddress custom = IbSocketAddress.of(GID, 0x7fff, 0x1000000000000001L);
        assertEquals("ib:[fe80::2:c903:a:b1c2]?sid=0x1000000000000001&pkey=0x7fff", custom.toString());
        assertFalse(custom.hasPort());
        assertEquals(-1, custom.port());
        assertEquals(custom, IbSocketAddress.parse("IB:[FE80:0:0:0:2:C903:A:B1C2]?pkey=32767&sid=0x1000000000000001"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "ib:[::]:0|ib:[::]:0",
        "ib:[::1]:1|ib:[::1]:1",
        "ib:[1::]:65535|ib:[1::]:65535",
        "ib:[1:0:0:2:0:0:0:3]:9|ib:[1:0:0:2::3]:9",
        "ib:[1:0:2:0:3:0:4:0]:9|ib:[1:0:2:0:3:0:4:0]:9",
        "ib:[::ffff:192.168.1.2]:9|ib:[::ffff:c0a8:102]:9",
        "ib:[fe80::1]?sid=17170512|ib:[fe80::1]:80",
        "ib:[fe80::1]:80?pkey=0xffff|ib:[fe80::1]:80",
    })
    void shouldParseToTheCanonicalForm(final String text, final String canonical) {
        assertEquals(canonical, IbSocketAddress.parse(text).toString());
    }

    @Test
    void shouldRoundTripRandomAddresses() {
        final SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < 5_000; i++) {
            final byte[] gid = new byte[16];
            for (int j = 0; j < 16; j++) {
                gid[j] = random.nextInt(4) == 0 ? (byte) random.nextInt(256) : 0;
            }
            final long serviceId = random.nextBoolean() ? IbSocketAddress.serviceIdOf(random.nextInt(65536))
                : random.nextLong();
            final IbSocketAddress address = IbSocketAddress.of(gid, random.nextInt(65536), serviceId);

            final IbSocketAddress parsed = IbSocketAddress.parse(address.toString());

            assertEquals(address, parsed, address.toString());
            assertEquals(address.hashCode(), parsed.hashCode());
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "tcp:[::1]:80|must start with \"ib:\"",
        "ib:::1:80|the GID must be enclosed in [ ]",
        "ib:[::1:80|missing ] after the GID",
        "ib:[]:80|empty GID",
        "ib:[1::2::3]:80|more than one :: in the GID",
        "ib:[1:2:3:4:5:6:7]:80|the GID needs 8 groups or a ::",
        "ib:[1:2:3:4:5:6:7:8:9]:80|too many groups in the GID",
        "ib:[1:2:3:4::5:6:7:8]:80|too many groups in the GID",
        "ib:[12345::]:80|bad GID group \"12345\"",
        "ib:[g::]:80|bad GID group \"g\"",
        "ib:[::1.2.3]:80|bad dotted IPv4 tail \"1.2.3\"",
        "ib:[::1.2.3.256]:80|bad dotted IPv4 tail \"1.2.3.256\"",
        "ib:[::1]|missing :PORT or ?sid=",
        "ib:[::1]80|expected :PORT or ?sid= after the GID",
        "ib:[::1]:|expected :PORT or ?sid= after the GID",
        "ib:[::1]:65536|port out of range [0, 65535]: port=65536",
        "ib:[::1]:-1|bad port \"-1\"",
        "ib:[::1]:0x50|bad port \"0x50\"",
        "ib:[::1]:80?pkey=0x10000|pkey out of range [0, 65535]: pkey=0x10000",
        "ib:[::1]:80?pkey=|bad pkey \"\"",
        "ib:[::1]:80?sid=5|sid given twice (a port stands for a sid)",
        "ib:[::1]:80?pkey=1&pkey=2|pkey given twice",
        "ib:[::1]:80?zone=1|unknown parameter \"zone\" (expected pkey or sid)",
    })
    void shouldRefuseBadTextNamingTheProblem(final String text, final String problem) {
        final IllegalArgumentException failure =
            assertThrows(IllegalArgumentException.class, () -> IbSocketAddress.parse(text));

        assertEquals("invalid InfiniBand address \"" + text + "\": " + problem, failure.getMessage());
    }

    @Test
    void shouldRefuseBadFields() {
        assertEquals("gid must be 16 bytes: gid.length=4",
            assertThrows(IllegalArgumentException.class, () -> IbSocketAddress.of(new byte[4], 1)).getMessage());
        assertEquals("port must be in [0, 65535]: port=65536",
            assertThrows(IllegalArgumentException.class, () -> IbSocketAddress.of(GID, 65536)).getMessage());
        assertEquals("pkey must be in [0, 0xFFFF]: pkey=65536",
            assertThrows(IllegalArgumentException.class, () -> IbSocketAddress.of(GID, 65536, 1L)).getMessage());
        assertThrows(NullPointerException.class, () -> IbSocketAddress.parse(null));
    }

    @Test
    void shouldCopyTheGid() {
        final byte[] gid = GID.clone();
        final IbSocketAddress address = IbSocketAddress.of(gid, 1);
        gid[0] = 0;
        address.gid()[1] = 0;

        assertArrayEquals(GID, address.gid());
        assertNotEquals(address, IbSocketAddress.of(gid, 1));
    }

    @Test
    void shouldSerializeThroughTheTextualForm() throws IOException, ClassNotFoundException {
        final IbSocketAddress address = IbSocketAddress.of(GID, 0x8001, 0x123456789abcdefL);
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(address);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(address, in.readObject());
        }
    }
}
