import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.Polygon;
import java.awt.RenderingHints;
import java.awt.geom.CubicCurve2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.imageio.ImageIO;

/**
 * Draws a Chrome Trace Event file — a Worker's timeline (docs/operations.md, "Timeline") —
 * as a PNG in the manner of the Perfetto UI: one row per thread track (named and ordered
 * by the file's {@code thread_name} / {@code thread_sort_index}), each slice a box coloured
 * by its name and labelled with it, nested slices one level below their parent, instants
 * as small triangles, flow arrows from each flow's start to its end. A single-file program
 * with no dependency (headless AWT; a small JSON reader of its own):
 *
 * <pre>java src/build/java/RenderTimeline.java IN.json OUT.png [FROM_MS TO_MS [ZOOM_FROM_MS ZOOM_TO_MS]]</pre>
 *
 * FROM_MS / TO_MS pick the window drawn, in milliseconds of the file's clock (default: every
 * slice); ZOOM_FROM_MS / ZOOM_TO_MS add a second view of every track below, enlarging that
 * window (shaded in the first).
 */
public final class RenderTimeline {

    private static final int WIDTH = 1600;
    private static final int LABELS = 190;
    private static final int RIGHT = 16;
    private static final int HEADER = 30;
    private static final int LEVEL = 19;
    private static final int GAP = 5;
    private static final Color[] PALETTE = {
        new Color(0x3F51B5), new Color(0x009688), new Color(0xE65100), new Color(0x7B1FA2),
        new Color(0x2E7D32), new Color(0xC62828), new Color(0x0277BD), new Color(0x6D4C41),
        new Color(0xAD1457), new Color(0x558B2F), new Color(0x00838F), new Color(0x4527A0),
        new Color(0xF9A825), new Color(0x5D4037), new Color(0x1565C0), new Color(0x8E24AA),
    };

    private record Slice(long tid, String name, double start, double end, int depth) {
    }

    private record Track(long tid, String name, long sort, List<Slice> slices, int levels) {
    }

    private RenderTimeline() {
    }

    public static void main(String[] argv) throws IOException {
        if (argv.length != 2 && argv.length != 4 && argv.length != 6) {
            System.err.println("usage: RenderTimeline IN.json OUT.png [FROM_MS TO_MS [ZOOM_FROM_MS ZOOM_TO_MS]]");
            System.exit(2);
        }
        System.setProperty("java.awt.headless", "true");
        Path in = Path.of(argv[0]);
        @SuppressWarnings("unchecked")
        Map<String, Object> root = (Map<String, Object>) new Json(Files.readString(in, StandardCharsets.UTF_8)).value();
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> events = (List<Map<String, Object>>) root.get("traceEvents");

        String process = "";
        Map<Long, String> names = new HashMap<>();
        Map<Long, Long> sortIndex = new HashMap<>();
        Map<Long, List<double[]>> raw = new TreeMap<>(); // tid -> {start, end, index into sliceNames}
        List<String> sliceNames = new ArrayList<>();
        List<Object[]> instants = new ArrayList<>(); // {tid, ts}
        Map<Long, Object[]> flowStart = new HashMap<>();
        List<Object[]> flows = new ArrayList<>(); // {tidFrom, tsFrom, tidTo, tsTo}
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (Map<String, Object> e : events) {
            String ph = (String) e.get("ph");
            long tid = num(e.get("tid")).longValue();
            @SuppressWarnings("unchecked")
            Map<String, Object> args = (Map<String, Object>) e.get("args");
            switch (ph) {
                case "M" -> {
                    String what = (String) e.get("name");
                    if (what.equals("process_name")) {
                        process = (String) args.get("name");
                    } else if (what.equals("thread_name")) {
                        names.put(tid, (String) args.get("name"));
                    } else if (what.equals("thread_sort_index")) {
                        sortIndex.put(tid, num(args.get("sort_index")).longValue());
                    }
                }
                case "X" -> {
                    double start = num(e.get("ts")).doubleValue();
                    double end = start + num(e.get("dur")).doubleValue();
                    sliceNames.add((String) e.get("name"));
                    raw.computeIfAbsent(tid, k -> new ArrayList<>()).add(new double[] {start, end, sliceNames.size() - 1});
                    min = Math.min(min, start);
                    max = Math.max(max, end);
                }
                case "i", "I" -> instants.add(new Object[] {tid, num(e.get("ts")).doubleValue()});
                case "s" -> flowStart.put(num(e.get("id")).longValue(), new Object[] {tid, num(e.get("ts")).doubleValue()});
                case "f" -> {
                    Object[] from = flowStart.get(num(e.get("id")).longValue());
                    if (from != null) {
                        flows.add(new Object[] {from[0], from[1], tid, num(e.get("ts")).doubleValue()});
                    }
                }
                default -> {
                }
            }
        }
        if (raw.isEmpty()) {
            throw new IllegalArgumentException(in + " has no slices");
        }
        double from = argv.length >= 4 ? Double.parseDouble(argv[2]) * 1000 : min;
        double to = argv.length >= 4 ? Double.parseDouble(argv[3]) * 1000 : max;
        if (argv.length == 2) {
            double pad = (to - from) * 0.01;
            from -= pad;
            to += pad;
        }
        double[] zoom = argv.length == 6
                ? new double[] {Double.parseDouble(argv[4]) * 1000, Double.parseDouble(argv[5]) * 1000} : null;

        // tracks in the file's order; depth by nesting (outer first: by start, the longer first)
        List<Track> tracks = new ArrayList<>();
        for (Map.Entry<Long, String> t : names.entrySet()) {
            List<double[]> rs = raw.getOrDefault(t.getKey(), List.of());
            List<double[]> sorted = new ArrayList<>(rs);
            sorted.sort((a, b) -> a[0] != b[0] ? Double.compare(a[0], b[0]) : Double.compare(b[1], a[1]));
            ArrayDeque<double[]> open = new ArrayDeque<>();
            List<Slice> slices = new ArrayList<>();
            int levels = 1;
            for (double[] r : sorted) {
                while (!open.isEmpty() && open.peek()[1] <= r[0]) {
                    open.pop();
                }
                slices.add(new Slice(t.getKey(), sliceNames.get((int) r[2]), r[0], r[1], open.size()));
                levels = Math.max(levels, open.size() + 1);
                open.push(r);
            }
            tracks.add(new Track(t.getKey(), t.getValue(), sortIndex.getOrDefault(t.getKey(), t.getKey()), slices,
                    levels));
        }
        tracks.sort((a, b) -> Long.compare(a.sort, b.sort));

        int trackHeight = 0;
        for (Track t : tracks) {
            trackHeight += t.levels * LEVEL + 2 * GAP;
        }
        int panel = HEADER + trackHeight;
        int height = 26 + panel + (zoom == null ? 0 : panel + 12) + 22;
        BufferedImage img = new BufferedImage(WIDTH, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, WIDTH, height);
        g.setColor(new Color(0x202124));
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 13));
        g.drawString(process + "  \u2014  " + in.getFileName(), 10, 18);
        panel(g, 26, tracks, instants, flows, from, to, zoom);
        if (zoom != null) {
            panel(g, 26 + panel + 12, tracks, instants, flows, zoom[0], zoom[1], null);
        }
        g.setColor(new Color(0x5F6368));
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        g.drawString("Rendered by src/build/java/RenderTimeline.java; time in ms since the Worker was built;"
                + " arrows: a run's enqueue \u2192 its finalize" + (zoom == null ? "" : "; below: the shaded"
                + " window, enlarged"), 10, height - 8);
        g.dispose();
        ImageIO.write(img, "png", Path.of(argv[1]).toFile());
        System.out.println("wrote " + argv[1] + ": " + tracks.size() + " tracks, " + sliceNames.size() + " slices, "
                + flows.size() + " flows");
    }

    /** One view of every track over [from, to] microseconds, at {@code y0}; {@code mark}: a window to shade. */
    private static void panel(Graphics2D g0, int y0, List<Track> tracks, List<Object[]> instants,
                              List<Object[]> flows, double from, double to, double[] mark) {
        Graphics2D g = (Graphics2D) g0.create();
        g.translate(0, y0);
        Map<Long, Integer> top = new LinkedHashMap<>();
        int y = HEADER;
        for (Track t : tracks) {
            top.put(t.tid, y);
            y += t.levels * LEVEL + 2 * GAP;
        }
        int height = y;
        Font plain = new Font(Font.SANS_SERIF, Font.PLAIN, 11);
        Scale x = new Scale(from, to, LABELS, WIDTH - RIGHT);

        // the time axis
        g.setColor(new Color(0xF1F3F4));
        g.fillRect(0, 0, WIDTH, HEADER - 4);
        g.setFont(plain);
        g.setColor(new Color(0x3C4043));
        g.drawString(String.format(Locale.ROOT, "%.3f \u2013 %.3f ms", from / 1000, to / 1000), 10, HEADER - 8);
        double step = niceStep((to - from) / 10);
        for (double t = Math.ceil(from / step) * step; t <= to; t += step) {
            int px = x.px(t);
            g.setColor(new Color(0xDADCE0));
            g.drawLine(px, HEADER - 16, px, height);
            String text = label(t, step);
            if (px + 3 + g.getFontMetrics().stringWidth(text) <= WIDTH) {
                g.setColor(new Color(0x5F6368));
                g.drawString(text, px + 3, HEADER - 8);
            }
        }

        // tracks
        int row = 0;
        for (Track t : tracks) {
            int ty = top.get(t.tid);
            int th = t.levels * LEVEL + 2 * GAP;
            g.setColor(row++ % 2 == 0 ? new Color(0xF8F9FA) : Color.WHITE);
            g.fillRect(0, ty, LABELS, th);
            g.setColor(new Color(0xE8EAED));
            g.drawLine(0, ty + th - 1, WIDTH, ty + th - 1);
            g.setColor(new Color(0x3C4043));
            g.setFont(plain);
            g.drawString(t.name, 10, ty + GAP + 13);
        }
        if (mark != null) {
            g.setColor(new Color(26, 115, 232, 40));
            int a = Math.max(LABELS, x.px(mark[0]));
            int b = Math.min(WIDTH - RIGHT, x.px(mark[1]));
            g.fillRect(a, HEADER - 16, Math.max(2, b - a), height - HEADER + 16);
        }
        g.setClip(LABELS, 0, WIDTH - LABELS - RIGHT + 1, height);
        for (Track t : tracks) {
            int ty = top.get(t.tid);
            for (Slice s : t.slices) {
                if (s.end < from || s.start > to) {
                    continue;
                }
                int x0 = Math.max(LABELS, x.px(s.start));
                int x1 = Math.min(WIDTH - RIGHT, x.px(s.end));
                int w = Math.max(1, x1 - x0);
                int sy = ty + GAP + s.depth * LEVEL;
                Color c = colour(s.name);
                g.setColor(c);
                g.fillRect(x0, sy, w, LEVEL - 2);
                if (w > 4) {
                    g.setColor(c.darker());
                    g.drawRect(x0, sy, w - 1, LEVEL - 3);
                }
                text(g, s.name, x0, sy, w, luminance(c) > 0.6 ? Color.BLACK : Color.WHITE);
            }
        }
        // instants: a small triangle on the track's top edge
        g.setColor(new Color(0xB00020));
        for (Object[] i : instants) {
            Integer ty = top.get((Long) i[0]);
            double ts = (Double) i[1];
            if (ty != null && ts >= from && ts <= to) {
                int px = x.px(ts);
                g.fillPolygon(new Polygon(new int[] {px - 5, px + 5, px}, new int[] {ty + 1, ty + 1, ty + 9}, 3));
            }
        }
        // flows: a curve from the start's slice to the end's, with an arrowhead
        g.setStroke(new BasicStroke(1.3f));
        for (Object[] f : flows) {
            Integer ya = top.get((Long) f[0]);
            Integer yb = top.get((Long) f[2]);
            double ta = (Double) f[1];
            double tb = (Double) f[3];
            if (ya == null || yb == null || tb < from || ta > to) {
                continue;
            }
            double ax = x.px(ta);
            double bx = x.px(tb);
            double ay = ya + GAP + LEVEL / 2.0;
            double by = yb + GAP + LEVEL / 2.0;
            g.setColor(new Color(32, 33, 36, 140));
            double mid = (ax + bx) / 2;
            g.draw(new CubicCurve2D.Double(ax, ay, mid, ay, mid, by, bx, by));
            g.fillPolygon(new Polygon(new int[] {(int) bx, (int) bx - 7, (int) bx - 7},
                    new int[] {(int) by, (int) by - 4, (int) by + 4}, 3));
        }
        g.dispose();
    }

    /** Microseconds of the file to pixels. */
    private record Scale(double from, double to, int left, int right) {
        int px(double us) {
            return (int) Math.round(left + (us - from) / (to - from) * (right - left));
        }
    }

    private static void text(Graphics2D g, String s, int x0, int y0, int w, Color c) {
        FontMetrics fm = g.getFontMetrics();
        if (w < 14) {
            return;
        }
        String t = s;
        while (!t.isEmpty() && fm.stringWidth(t) > w - 6) {
            t = t.substring(0, t.length() - 1);
        }
        if (t.length() < s.length()) {
            if (t.length() < 2) {
                return;
            }
            t = t.substring(0, t.length() - 1) + "\u2026";
        }
        g.setColor(c);
        Graphics2D clip = (Graphics2D) g.create(x0, y0, w, LEVEL);
        clip.setColor(c);
        clip.drawString(t, (w - fm.stringWidth(t)) / 2, 13);
        clip.dispose();
    }

    /** A Worker timeline's own slices in fixed colours; any other name by its hash (digits ignored). */
    private static Color colour(String name) {
        return switch (name) {
            case "queued" -> new Color(0x90A4AE);
            case "prepare" -> new Color(0x3F51B5);
            case "launch" -> new Color(0xE65100);
            case "execution" -> new Color(0x2E7D32);
            case "finalize" -> new Color(0x0277BD);
            case "collective step" -> new Color(0x6D4C41);
            default -> name.startsWith("run ") ? new Color(0x00897B)
                    : PALETTE[Math.floorMod(name.replaceAll("[0-9]", "").hashCode(), PALETTE.length)];
        };
    }

    private static double luminance(Color c) {
        return (0.299 * c.getRed() + 0.587 * c.getGreen() + 0.114 * c.getBlue()) / 255;
    }

    private static double niceStep(double rough) {
        double p = Math.pow(10, Math.floor(Math.log10(rough)));
        for (double m : new double[] {1, 2, 5, 10}) {
            if (m * p >= rough) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static String label(double us, double step) {
        int decimals = Math.max(0, (int) Math.ceil(-Math.log10(step / 1000)));
        return String.format(Locale.ROOT, "%." + decimals + "f ms", us / 1000);
    }

    private static BigDecimal num(Object o) {
        return (BigDecimal) o;
    }

    /** A minimal JSON reader: objects (LinkedHashMap), arrays (ArrayList), strings, BigDecimal, booleans, null. */
    private static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            skip();
            char c = s.charAt(i);
            switch (c) {
                case '{' -> {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    skip();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        skip();
                        String k = string();
                        skip();
                        expect(':');
                        m.put(k, value());
                        skip();
                        if (s.charAt(i++) == '}') {
                            return m;
                        }
                    }
                }
                case '[' -> {
                    i++;
                    List<Object> l = new ArrayList<>();
                    skip();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        skip();
                        if (s.charAt(i++) == ']') {
                            return l;
                        }
                    }
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    if (s.startsWith("true", i)) {
                        i += 4;
                        return Boolean.TRUE;
                    }
                    if (s.startsWith("false", i)) {
                        i += 5;
                        return Boolean.FALSE;
                    }
                    if (s.startsWith("null", i)) {
                        i += 4;
                        return null;
                    }
                    int start = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    if (start == i) {
                        throw new IllegalArgumentException("JSON: unexpected '" + c + "' at " + i);
                    }
                    return new BigDecimal(s.substring(start, i));
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 't' -> b.append('\t');
                    case 'r' -> b.append('\r');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> b.append(e);
                }
            }
        }

        private void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("JSON: expected '" + c + "' at " + i);
            }
            i++;
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
