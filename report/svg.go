package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The charts are drawn as SVG by hand: a few dozen lines do what the run
// reports need (lines, log scale, shaded bands, lanes), the result is
// self-contained, and a plotting library would bring dependencies for no
// more than that.

// series is one line of a chart.
type series struct {
	Name  string
	Color string
	X, Y  []float64
}

// band is a shaded stretch of the x axis (a fault in force).
type band struct {
	From, To float64
	Label    string
}

// lineChart is a chart of series over time, with fault bands.
type lineChart struct {
	ID, Title, XLabel, YLabel string
	Width, Height             int
	LogY                      bool
	// XMax, if above the data, extends the x axis (so that every chart of
	// a run spans the whole load).
	XMax   float64
	Series []series
	Bands  []band
}

const (
	padLeft, padRight, padTop, padBottom = 70, 20, 30, 45
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e9; v += step {
		out = append(out, v)
	}
	return out
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// SVG renders the chart: its scale, then the fault bands, the axes and
// the series with their legend.
func (c lineChart) SVG() string {
	if c.Width == 0 {
		c.Width, c.Height = 900, 300
	}
	sc := c.scale()
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`,
		html.EscapeString(c.ID), c.Width, c.Height, c.Width, c.Height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, padLeft, html.EscapeString(c.Title))
	c.writeBands(&b, sc)
	c.writeAxes(&b, sc)
	c.writeSeries(&b, sc)
	b.WriteString(`</svg>`)
	return b.String()
}

// chartScale maps a line chart's data to its plot area: pw by ph pixels
// inside the padding, x from xmin to xmax, y from ymin to ymax (on a log
// scale when logY).
type chartScale struct {
	pw, ph                 float64
	xmin, xmax, ymin, ymax float64
	logY                   bool
}

// scale fits the chart's axes to its points and bands: x from 0 (time
// since the load started) or earlier to the data's end or XMax; y from 0
// or below, 5% above the top, or on a log scale whole decades around the
// points above 0. A chart with nothing to plot gets an empty axis, not an
// infinite one.
func (c lineChart) scale() chartScale {
	sc := chartScale{pw: float64(c.Width - padLeft - padRight), ph: float64(c.Height - padTop - padBottom), logY: c.LogY}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			if c.LogY && s.Y[i] <= 0 {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	for _, b := range c.Bands {
		xmin, xmax = math.Min(xmin, b.From), math.Max(xmax, b.To)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	// No point to plot (a latency chart of a run without e2e, with only
	// fault bands): an empty axis, not an infinite one.
	if math.IsInf(ymin, 0) || math.IsInf(ymax, 0) {
		ymin, ymax = 0, 1
		if c.LogY {
			ymin, ymax = 1, 10
		}
	}
	xmin = math.Min(xmin, 0) // every chart is time since the load started
	xmax = math.Max(xmax, c.XMax)
	if xmax == xmin {
		xmax = xmin + 1
	}
	if c.LogY {
		ymin = math.Pow(10, math.Floor(math.Log10(math.Max(ymin, 1e-3))))
		ymax = math.Pow(10, math.Ceil(math.Log10(math.Max(ymax, ymin*10))))
	} else {
		ymin = math.Min(0, ymin)
		if ymax <= ymin {
			ymax = ymin + 1
		}
		ymax *= 1.05
	}
	sc.xmin, sc.xmax, sc.ymin, sc.ymax = xmin, xmax, ymin, ymax
	return sc
}

// x is where time v stands on the plot.
func (sc chartScale) x(v float64) float64 { return padLeft + (v-sc.xmin)/(sc.xmax-sc.xmin)*sc.pw }

// y is where value v stands on the plot.
func (sc chartScale) y(v float64) float64 {
	return padTop + sc.ph - (sc.ty(v)-sc.ty(sc.ymin))/(sc.ty(sc.ymax)-sc.ty(sc.ymin))*sc.ph
}

// ty is v on the y axis's scale: its logarithm (values below ymin at
// ymin) on a log scale.
func (sc chartScale) ty(v float64) float64 {
	if sc.logY {
		return math.Log10(math.Max(v, sc.ymin))
	}
	return v
}

// writeBands shades each fault band, at least 2 pixels wide, with its
// label.
func (c lineChart) writeBands(b *strings.Builder, sc chartScale) {
	for _, bd := range c.Bands {
		x0, x1 := sc.x(bd.From), sc.x(bd.To)
		if x1-x0 < 2 {
			x1 = x0 + 2
		}
		fmt.Fprintf(b, `<rect class="fault-band" data-label="%s" x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#f4a582" fill-opacity="0.35"/>`,
			html.EscapeString(bd.Label), x0, padTop, x1-x0, sc.ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#b2182b">%s</text>`, x0+3, padTop+12, html.EscapeString(bd.Label))
	}
}

// writeAxes draws both axes, their ticks (each decade on a log scale, at
// most 40) with grid lines across the plot, and their labels.
func (c lineChart) writeAxes(b *strings.Builder, sc chartScale) {
	pw, ph := sc.pw, sc.ph
	fmt.Fprintf(b, `<line x1="%d" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/>`, padLeft, padTop+ph, padLeft+pw, padTop+ph)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%.0f" stroke="#333"/>`, padLeft, padTop, padLeft, padTop+ph)
	for _, t := range niceTicks(sc.xmin, sc.xmax, 8) {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, sc.x(t), padTop+ph+15, fmtNum(t))
	}
	var yt []float64
	if c.LogY {
		for v := sc.ymin; v <= sc.ymax*1.0001 && len(yt) < 40; v *= 10 {
			yt = append(yt, v)
		}
	} else {
		yt = niceTicks(sc.ymin, sc.ymax, 5)
	}
	for _, t := range yt {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`, padLeft, sc.y(t), padLeft+pw, sc.y(t))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padLeft-5, sc.y(t)+4, fmtNum(t))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`, padLeft+pw/2, c.Height-8, html.EscapeString(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(14,%.0f) rotate(-90)" text-anchor="middle">%s</text>`, padTop+ph/2, html.EscapeString(c.YLabel))
}

// writeSeries draws each series as a line (on a log scale, its points
// above 0) in its color or the palette's, with a legend slot on the
// right of the title line.
func (c lineChart) writeSeries(b *strings.Builder, sc chartScale) {
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		var pts []string
		for j := range s.X {
			if c.LogY && s.Y[j] <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sc.x(s.X[j]), sc.y(s.Y[j])))
		}
		fmt.Fprintf(b, `<g class="series" data-name="%s" data-points="%d"><polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/></g>`,
			html.EscapeString(s.Name), len(pts), color, strings.Join(pts, " "))
		// Legend on the right of the title line, one slot per series.
		lx := c.Width - padRight - (len(c.Series)-i)*90
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`,
			lx, 14, color, lx+16, 18, html.EscapeString(s.Name))
	}
}

// lanes is a chart with one row per partition showing when it had no acks.
type lanes struct {
	ID, Title string
	Width     int
	XMax      float64
	Rows      []string
	Gaps      [][][2]float64 // per row, [from, to] seconds
	Bands     []band
}

// SVG renders the lanes.
func (l lanes) SVG() string {
	if l.Width == 0 {
		l.Width = 900
	}
	rowH := 14
	h := padTop + padBottom + rowH*len(l.Rows)
	pw := float64(l.Width - padLeft - padRight)
	xmax := math.Max(l.XMax, 1)
	x := func(v float64) float64 { return padLeft + v/xmax*pw }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`,
		html.EscapeString(l.ID), l.Width, h, l.Width, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, padLeft, html.EscapeString(l.Title))
	for _, bd := range l.Bands {
		fmt.Fprintf(&b, `<rect class="fault-band" data-label="%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="#f4a582" fill-opacity="0.25"/>`,
			html.EscapeString(bd.Label), x(bd.From), padTop, math.Max(2, x(bd.To)-x(bd.From)), rowH*len(l.Rows))
	}
	for i, r := range l.Rows {
		yy := padTop + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, padLeft-5, yy+11, html.EscapeString(r))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="#e7f3e7"/>`, padLeft, yy+2, pw, rowH-4)
		for _, g := range l.Gaps[i] {
			fmt.Fprintf(&b, `<rect class="gap" data-row="%s" x="%.1f" y="%d" width="%.1f" height="%d" fill="#d62728"/>`,
				html.EscapeString(r), x(g[0]), yy+2, math.Max(1, x(g[1])-x(g[0])), rowH-4)
		}
	}
	for _, t := range niceTicks(0, xmax, 8) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), padTop+rowH*len(l.Rows)+15, fmtNum(t))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">seconds since the load started (red: no ack for %s)</text>`, padLeft+pw/2, h-8, "0.5 s or more")
	b.WriteString(`</svg>`)
	return b.String()
}
