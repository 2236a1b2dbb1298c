package io.rdmachannel.demo.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.geom.AffineTransform;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.ToDoubleFunction;
import javax.imageio.ImageIO;

/**
 * Draws the results into a PNG with Java 2D, off screen: p50 latency and bandwidth against message size side by
 * side, both axes logarithmic, one line per transport and mode (colour by transport, dash by mode), with a legend.
 */
final class BenchPlot {
    private static final int PANEL_WIDTH = 640;
    private static final int HEIGHT = 520;
    private static final int LEFT = 80;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 150;
    private static final Color[] TRANSPORT_COLOURS = {new Color(0xd62728), new Color(0x1f77b4), new Color(0x2ca02c)};
    private static final float[][] MODE_DASHES = {null, {10f, 6f}, {2f, 4f}};

    private BenchPlot() {
    }

    /**
     * Write the plot of {@code results} to {@code file} as a PNG.
     */
    static void write(final List<BenchResult> results, final Path file) throws IOException {
        final BufferedImage image = new BufferedImage(2 * PANEL_WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        final Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, image.getWidth(), image.getHeight());
            panel(g, 0, "latency: p50 round trip", "p50 round trip (us)", series(results, Workload.LATENCY,
                BenchResult::p50Us));
            panel(g, PANEL_WIDTH, "bandwidth: one-way stream", "MB/s (10^6 bytes)", series(results,
                Workload.BANDWIDTH, BenchResult::mbPerS));
        } finally {
            g.dispose();
        }
        if (!ImageIO.write(image, "png", file.toFile())) {
            throw new IOException("no PNG writer in this JDK for " + file);
        }
    }

    /**
     * One series of points (size, value), in the order measured, and how to draw it.
     */
    record Series(String name, Color colour, float[] dash, List<double[]> points) {
    }

    static List<Series> series(final List<BenchResult> results, final Workload workload,
        final ToDoubleFunction<BenchResult> value) {
        final Map<String, Series> series = new LinkedHashMap<>();
        for (final BenchResult result : results) {
            if (!result.test().equals(workload.label())) {
                continue;
            }
            final Series line = series.computeIfAbsent(result.series(), name -> new Series(name,
                TRANSPORT_COLOURS[Transport.of(result.transport()).ordinal() % TRANSPORT_COLOURS.length],
                MODE_DASHES[Mode.of(result.mode()).ordinal() % MODE_DASHES.length], new ArrayList<>()));
            line.points().add(new double[] {result.size(), value.applyAsDouble(result)});
        }
        for (final Series line : series.values()) {
            line.points().sort((a, b) -> Double.compare(a[0], b[0]));
        }
        return List.copyOf(series.values());
    }

    private static void panel(final Graphics2D g, final int x0, final String title, final String yLabel,
        final List<Series> series) {
        final int width = PANEL_WIDTH - LEFT - RIGHT;
        final int height = HEIGHT - TOP - BOTTOM;
        final int left = x0 + LEFT;
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
        g.setColor(Color.BLACK);
        g.drawString(title, left, TOP - 14);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        if (series.isEmpty()) {
            g.drawString("not measured", left + width / 2 - 40, TOP + height / 2);
            return;
        }
        final TreeSet<Double> sizes = new TreeSet<>();
        double low = Double.MAX_VALUE;
        double high = 0;
        for (final Series line : series) {
            for (final double[] point : line.points()) {
                sizes.add(point[0]);
                low = Math.min(low, point[1]);
                high = Math.max(high, point[1]);
            }
        }
        final Axis x = new Axis(Math.log10(sizes.first()) - 0.15, Math.log10(sizes.last()) + 0.15, left, width);
        final Axis y = new Axis(Math.floor(Math.log10(Math.max(low, 1e-3))),
            Math.ceil(Math.log10(Math.max(high, 1e-3)) + 1e-9), TOP + height, -height);
        g.setColor(Color.LIGHT_GRAY);
        for (double decade = y.min(); decade <= y.max(); decade++) {
            for (int step = 1; step < 10 && decade + Math.log10(step) <= y.max(); step++) {
                final int py = y.pixel(decade + Math.log10(step));
                g.setColor(step == 1 ? Color.GRAY : new Color(0xe8e8e8));
                g.drawLine(left, py, left + width, py);
                if (step == 1 || step == 2 || step == 5) {
                    g.setColor(Color.BLACK);
                    final String label = tick(Math.pow(10, decade) * step);
                    g.drawString(label, left - 8 - g.getFontMetrics().stringWidth(label), py + 4);
                }
            }
        }
        for (final double size : sizes) {
            final int px = x.pixel(Math.log10(size));
            g.setColor(new Color(0xe8e8e8));
            g.drawLine(px, TOP, px, TOP + height);
            g.setColor(Color.BLACK);
            final String label = ResultFormat.size((long) size);
            g.drawString(label, px - g.getFontMetrics().stringWidth(label) / 2, TOP + height + 16);
        }
        g.setColor(Color.BLACK);
        g.drawRect(left, TOP, width, height);
        g.drawString("message size (bytes, log scale)", left + width / 2 - 90, TOP + height + 34);
        final AffineTransform saved = g.getTransform();
        g.rotate(-Math.PI / 2, x0 + 18, TOP + height / 2.0);
        g.drawString(yLabel + ", log scale", x0 + 18 - 80, TOP + height / 2 + 4);
        g.setTransform(saved);
        lines(g, series, x, y);
        legend(g, series, left, TOP + height + 50);
    }

    private static void lines(final Graphics2D g, final List<Series> series, final Axis x, final Axis y) {
        final Stroke saved = g.getStroke();
        for (final Series line : series) {
            g.setColor(line.colour());
            g.setStroke(new BasicStroke(2.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, line.dash(), 0f));
            final Path2D path = new Path2D.Double();
            for (final double[] point : line.points()) {
                final int px = x.pixel(Math.log10(point[0]));
                final int py = y.pixel(Math.log10(Math.max(point[1], 1e-3)));
                if (path.getCurrentPoint() == null) {
                    path.moveTo(px, py);
                } else {
                    path.lineTo(px, py);
                }
                g.fillOval(px - 3, py - 3, 7, 7);
            }
            g.draw(path);
        }
        g.setStroke(saved);
    }

    private static void legend(final Graphics2D g, final List<Series> series, final int left, final int top) {
        final Stroke saved = g.getStroke();
        final int columns = 3;
        final int columnWidth = (PANEL_WIDTH - LEFT - RIGHT) / columns;
        for (int i = 0; i < series.size(); i++) {
            final Series line = series.get(i);
            final int lx = left + (i % columns) * columnWidth;
            final int ly = top + (i / columns) * 18;
            g.setColor(line.colour());
            g.setStroke(new BasicStroke(2.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f, line.dash(), 0f));
            g.drawLine(lx, ly, lx + 30, ly);
            g.setColor(Color.BLACK);
            g.drawString(line.name(), lx + 36, ly + 4);
        }
        g.setStroke(saved);
    }

    private static String tick(final double value) {
        if (value >= 1) {
            return String.format(Locale.ROOT, "%,.0f", value);
        }
        return String.format(Locale.ROOT, "%s", (float) value);
    }

    /**
     * A logarithmic axis: decades {@code min} to {@code max} over {@code length} pixels from {@code origin}.
     */
    private record Axis(double min, double max, int origin, int length) {
        int pixel(final double log) {
            return origin + (int) Math.round((log - min) / (max - min) * length);
        }
    }
}
