package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.roundIomapEntries;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.scaleToValue;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.valueToScale;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class IomapScaleTest {
    @ParameterizedTest(name = "value {0} -> scale {1} -> value {2}")
    @CsvSource({
        "0, 0x00, 0",
        "1, 0x01, 1",
        "127, 0x7F, 127",
        "128, 0x80, 128",
        "129, 0x80, 128",
        "255, 0x80, 128",
        "256, 0x81, 256",
        "257, 0x81, 256",
        "511, 0x81, 256",
        "512, 0x82, 512",
        "32512, 0xFF, 32512",
        "32767, 0xFF, 32512",
    })
    void shouldRoundTripAtTheDocumentedBoundaries(final int value, final String scale, final int decoded) {
        final int expectedScale = Integer.decode(scale);
        assertEquals(expectedScale, valueToScale(value));
        assertEquals(decoded, scaleToValue(expectedScale));
        assertEquals(decoded, roundIomapEntries(value));
    }

    @ParameterizedTest(name = "scale {0} -> {1}")
    @CsvSource({"0x80, 128", "0x81, 256", "0xFE, 32256", "0xFF, 32512", "-1, 32512", "0x100, 0"})
    void shouldDecodeEveryScaleByte(final String scale, final int value) {
        assertEquals(value, scaleToValue(Integer.decode(scale)));
    }

    @ParameterizedTest(name = "value {0}")
    @CsvSource({"-1", "32768", "65535"})
    void shouldRefuseValuesTheScaleCannotCarry(final int value) {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> valueToScale(value));
        assertEquals("iomap size must be in [0, 32767]: value=" + value, ex.getMessage());
    }
}
