// Package chart is how this repository's charts are drawn and written: gonum/plot with its
// compiled-in Liberation fonts (nothing looked up on the system or fetched at run time), PNG at
// 144 dpi and SVG whose font names fall back to the metrically compatible Arial and Helvetica.
// The lab, bench/peers and bench/fleet draw their own panels and write them through it.
package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the PNG's resolution: a 15 in wide chart is 2160 px, sharp on high-density screens.
const DPI = 144

// Sans is the charts' typeface, Liberation Sans, compiled into the binary.
var Sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Text is black Liberation Sans text of size points.
func Text(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(Sans, size), Handler: plot.DefaultTextHandler}
}

// Drawer draws a whole chart on a canvas, whatever its format.
type Drawer func(draw.Canvas) error

// WriteSVG draws a chart of width×height with d as SVG. Its text names Liberation Sans, with
// Arial and Helvetica after it, so that a viewer without the Liberation fonts lays the labels
// out the same.
func WriteSVG(w io.Writer, width, height vg.Length, d Drawer) error {
	c := vgsvg.New(width, height)
	if err := d(draw.New(c)); err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	svg := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
	_, err := w.Write(svg)
	return err
}

// WritePNG draws a chart of width×height with d as PNG at DPI.
func WritePNG(w io.Writer, width, height vg.Length, d Drawer) error {
	c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))
	if err := d(draw.New(c)); err != nil {
		return err
	}
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// WriteFiles writes the chart as path.svg and path.png. Each is drawn whole before its file is
// written, so a chart that fails to draw leaves the files it would replace as they were.
func WriteFiles(path string, width, height vg.Length, d Drawer) error {
	for _, out := range []struct {
		ext   string
		write func(io.Writer, vg.Length, vg.Length, Drawer) error
	}{{".svg", WriteSVG}, {".png", WritePNG}} {
		var buf bytes.Buffer
		if err := out.write(&buf, width, height, d); err != nil {
			return fmt.Errorf("chart %s%s: %w", path, out.ext, err)
		}
		if err := os.WriteFile(path+out.ext, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LaneColor is the colour of a client lane, the same in every benchmark chart: gocql blues,
// cqlcontrol reds (darker when governed), the other drivers as bench/peers has them; grey for a
// lane it does not know. Either spelling of a lane's name finds it: bench/peers' ("cqlcontrol
// governed v2") or bench/fleet's ("cqlcontrol-governed-v2"); case, spaces and hyphens do not count.
func LaneColor(lane string) color.RGBA {
	key := strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, lane)
	if c, ok := laneColors[key]; ok {
		return c
	}
	return color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
}

var laneColors = map[string]color.RGBA{
	"gocql":                {0x1f, 0x77, 0xb4, 0xff},
	"gocqlv2":              {0x17, 0xbe, 0xcf, 0xff},
	"cqlcontrol":           {0xff, 0x98, 0x96, 0xff},
	"cqlcontrolgoverned":   {0xd6, 0x27, 0x28, 0xff},
	"cqlcontrolgovernedv2": {0x8c, 0x1a, 0x1a, 0xff},
	"java":                 {0x94, 0x67, 0xbd, 0xff},
	"rust":                 {0x8c, 0x56, 0x4b, 0xff},
	"python":               {0x2c, 0xa0, 0x2c, 0xff},
	"python(scylladriver)": {0x98, 0xdf, 0x8a, 0xff},
	"node":                 {0xff, 0x7f, 0x0e, 0xff},
}

// DecadeTicks labels each power of ten from lo to hi (themselves powers of ten) on a log axis,
// with unlabelled minor ticks at 2–9 times each.
func DecadeTicks(lo, hi float64) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for d := lo; d <= hi*1.0001; d *= 10 {
		ticks = append(ticks, plot.Tick{Value: d, Label: strconv.FormatFloat(d, 'g', -1, 64)})
		for k := 2.0; k < 10 && d*k < hi; k++ {
			ticks = append(ticks, plot.Tick{Value: d * k})
		}
	}
	return ticks
}
