package io.rdmachannel.channel.internal;

import java.util.Locale;
import java.util.Properties;

/**
 * Reads configuration properties with the house rules: whole numbers only, a range, and an
 * {@link IllegalArgumentException} naming the property and its value.
 */
public final class Settings {
    private Settings() {
    }

    /**
     * An integer property.
     *
     * @param properties the source.
     * @param name the property name.
     * @param defaultValue the value when the property is not set.
     * @param min the smallest value allowed.
     * @param max the largest value allowed.
     * @return the value.
     * @throws IllegalArgumentException if the value is not a whole number or is out of range.
     */
    public static int intProperty(final Properties properties, final String name, final int defaultValue,
        final int min, final int max) {
        final String text = properties.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        final int value;
        try {
            value = Integer.parseInt(text.trim());
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(name + " must be a whole number: " + name + "=" + text, ex);
        }
        if (value < min || value > max) {
            throw invalid(name + " must be in [" + min + ", " + max + "]", name, value);
        }
        return value;
    }

    /**
     * A boolean property: {@code true} or {@code false}, in any case.
     *
     * @param properties the source.
     * @param name the property name.
     * @param defaultValue the value when the property is not set.
     * @return the value.
     * @throws IllegalArgumentException if the value is neither.
     */
    public static boolean booleanProperty(final Properties properties, final String name,
        final boolean defaultValue) {
        final String text = properties.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(name + " must be true or false: " + name + "=" + text);
        };
    }

    /**
     * The exception for a value that breaks a rule.
     *
     * @param rule what the value must satisfy.
     * @param name the property name.
     * @param value the value.
     * @return the exception, to throw.
     */
    public static IllegalArgumentException invalid(final String rule, final String name, final long value) {
        return new IllegalArgumentException(rule + ": " + name + "=" + value);
    }
}
