package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Properties;

class StreamConfigurationTest {
    private static StreamConfiguration with(final String... nameValues) {
        final Properties properties = new Properties();
        for (int i = 0; i < nameValues.length; i += 2) {
            properties.setProperty(nameValues[i], nameValues[i + 1]);
        }
        return StreamConfiguration.fromProperties(properties);
    }

    private static String refusal(final String... nameValues) {
        return assertThrows(IllegalArgumentException.class, () -> with(nameValues)).getMessage();
    }

    @Test
    void shouldDefaultToTheRsocketsValues() {
        final StreamConfiguration configuration = StreamConfiguration.defaults();

        assertEquals(384, configuration.sendQueueSize());
        assertEquals(384, configuration.receiveQueueSize());
        assertEquals(64, configuration.inlineDataLength());
        assertEquals(131072, configuration.receiveBufferLength());
        assertEquals(131072, configuration.sendBufferLength());
        assertEquals(0, configuration.iomapEntries());
        assertEquals(4, configuration.controlWindow());
        assertEquals(2, configuration.targetSglEntries());
        assertEquals(65536, configuration.maxTransferLength());
        assertEquals(2048, configuration.transferStartLength());
        assertEquals(2048, configuration.sendLowWaterMark());
        assertEquals(50, configuration.pollingTimeMicros());
        assertEquals(7, configuration.resolveAttempts());
        assertEquals(6, configuration.retryCount());
        assertEquals(7, configuration.rnrRetryCount());
        assertEquals(256, configuration.peerMaxTargetSglEntries());
        assertEquals(1 << 30, configuration.peerMaxDataBufferLength());
    }

    @Test
    void shouldReadOverrides() {
        final StreamConfiguration configuration = with(
            StreamConfiguration.RECEIVE_QUEUE_SIZE_PROP_NAME, " 16 ",
            StreamConfiguration.RECEIVE_BUFFER_LENGTH_PROP_NAME, "8192",
            StreamConfiguration.INLINE_DATA_LENGTH_PROP_NAME, "0");

        assertEquals(16, configuration.receiveQueueSize());
        assertEquals(8192, configuration.receiveBufferLength());
        assertEquals(0, configuration.inlineDataLength());
        assertEquals(384, configuration.sendQueueSize());
    }

    @Test
    void shouldRoundIomapEntriesThroughTheScale() {
        assertEquals(256, with(StreamConfiguration.IOMAP_ENTRIES_PROP_NAME, "300").iomapEntries());
        assertEquals(32512, with(StreamConfiguration.IOMAP_ENTRIES_PROP_NAME, "32767").iomapEntries());
        assertEquals(1, with(StreamConfiguration.IOMAP_ENTRIES_PROP_NAME, "1").iomapEntries());
    }

    @Test
    void shouldBuildAValidatorWithThePeerLimits() {
        final ConnectionDataValidator validator = with(
            StreamConfiguration.PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME, "4",
            StreamConfiguration.PEER_MAX_DATA_BUFFER_LENGTH_PROP_NAME, "65536").newConnectionDataValidator();

        assertEquals(4, validator.maxTargetSglEntries());
        assertEquals(65536, validator.maxDataBufferLength());
    }

    @ParameterizedTest(name = "{0} clamped to {2} with max_qp_wr {1}")
    @CsvSource({"384, 16384, 384", "8, 16384, 16", "65534, 1000000, 65534", "65534, 4096, 4096", "0, 4096, 16"})
    void shouldClampQueuePairSizes(final int requested, final int deviceMax, final int expected) {
        assertEquals(expected, StreamConfiguration.clampQueuePairSize(requested, deviceMax));
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
        "rdmachannel.stream.sendQueueSize|15|[16, 65534]",
        "rdmachannel.stream.receiveQueueSize|65535|[16, 65534]",
        "rdmachannel.stream.inlineDataLength|-1|[0, 65535]",
        "rdmachannel.stream.receiveBufferLength|2048|[4096, 1073741824]",
        "rdmachannel.stream.sendBufferLength|1073741825|[4096, 1073741824]",
        "rdmachannel.stream.iomapEntries|32768|[0, 32767]",
        "rdmachannel.stream.controlWindow|0|[1, 64]",
        "rdmachannel.stream.targetSglEntries|257|[1, 256]",
        "rdmachannel.stream.maxTransferLength|536870912|[1, 536870911]",
        "rdmachannel.stream.transferStartLength|0|[1, 536870911]",
        "rdmachannel.stream.sendLowWaterMark|0|[1, 536870912]",
        "rdmachannel.stream.pollingTimeMicros|-1|[0, 1000000]",
        "rdmachannel.stream.resolveAttempts|0|[1, 10]",
        "rdmachannel.stream.retryCount|8|[0, 7]",
        "rdmachannel.stream.rnrRetryCount|-1|[0, 7]",
        "rdmachannel.stream.peerMaxTargetSglEntries|0|[1, 65535]",
        "rdmachannel.stream.peerMaxDataBufferLength|0|[1, 2147483647]",
    })
    void shouldRefuseValuesOutOfRange(final String name, final String value, final String range) {
        assertEquals(name + " must be in " + range + ": " + name + "=" + value, refusal(name, value));
    }

    @Test
    void shouldRefuseANonNumber() {
        assertEquals("rdmachannel.stream.sendQueueSize must be a whole number: rdmachannel.stream.sendQueueSize=big",
            refusal(StreamConfiguration.SEND_QUEUE_SIZE_PROP_NAME, "big"));
    }

    @Test
    void shouldRefuseAnOddReceiveBuffer() {
        assertEquals("rdmachannel.stream.receiveBufferLength must be even, it is advertised in halves: "
            + "rdmachannel.stream.receiveBufferLength=4097",
            refusal(StreamConfiguration.RECEIVE_BUFFER_LENGTH_PROP_NAME, "4097"));
    }

    @Test
    void shouldRefuseAControlWindowThatIsNotAPowerOfTwo() {
        assertEquals("rdmachannel.stream.controlWindow must be a power of two below rdmachannel.stream.sendQueueSize"
            + "=384: rdmachannel.stream.controlWindow=6",
            refusal(StreamConfiguration.CONTROL_WINDOW_PROP_NAME, "6"));
    }

    @Test
    void shouldRefuseAControlWindowAsDeepAsTheSendQueue() {
        assertEquals("rdmachannel.stream.controlWindow must be a power of two below rdmachannel.stream.sendQueueSize"
            + "=16: rdmachannel.stream.controlWindow=16",
            refusal(StreamConfiguration.SEND_QUEUE_SIZE_PROP_NAME, "16",
                StreamConfiguration.CONTROL_WINDOW_PROP_NAME, "16"));
    }

    @Test
    void shouldRefuseAStartLengthAboveTheMaximum() {
        assertEquals("rdmachannel.stream.transferStartLength must not exceed rdmachannel.stream.maxTransferLength"
            + "=1024: rdmachannel.stream.transferStartLength=2048",
            refusal(StreamConfiguration.MAX_TRANSFER_LENGTH_PROP_NAME, "1024"));
    }

    @Test
    void shouldRefuseALowWaterMarkAboveHalfTheSendBuffer() {
        assertEquals("rdmachannel.stream.sendLowWaterMark must be at most half of rdmachannel.stream.sendBufferLength"
            + "=4096: rdmachannel.stream.sendLowWaterMark=2049",
            refusal(StreamConfiguration.SEND_BUFFER_LENGTH_PROP_NAME, "4096",
                StreamConfiguration.SEND_LOW_WATER_MARK_PROP_NAME, "2049"));
    }
}
