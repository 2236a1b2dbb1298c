package io.rdmachannel.channel.spi;

/**
 * Receives completions from {@link CompletionQueue#poll(CompletionHandler, int)}.
 */
@FunctionalInterface
public interface CompletionHandler {
    /**
     * One completion. The flyweight is valid only during the call and is reused for the next completion.
     *
     * @param completion the completion.
     */
    void onCompletion(WorkCompletion completion);
}
