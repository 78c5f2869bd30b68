package train

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WriteCSV writes the loss curve: one row per step (step, lr, ce, kl, gnorm, tokens, seconds).
func WriteCSV(w io.Writer, hist []Record) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"step", "lr", "ce", "kl", "gnorm", "tokens", "seconds"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, r := range hist {
		cw.Write([]string{strconv.Itoa(r.Step), f(r.LR), f(r.CE), f(r.KL), f(r.GNorm), strconv.FormatInt(r.Tokens, 10), strconv.FormatFloat(r.Seconds, 'f', 2, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteSVG draws the loss curve (cross-entropy and KL to the teacher per step, the cross-entropy also as a moving
// mean over 20 steps) as an SVG picture with gonum/plot.
func WriteSVG(w io.Writer, hist []Record, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "nats per token"
	p.Add(plotter.NewGrid())
	ce, kl, avg := make(plotter.XYs, len(hist)), make(plotter.XYs, len(hist)), make(plotter.XYs, len(hist))
	var sum float64
	for i, r := range hist {
		ce[i] = plotter.XY{X: float64(r.Step), Y: r.CE}
		kl[i] = plotter.XY{X: float64(r.Step), Y: r.KL}
		sum += r.CE
		if i >= 20 {
			sum -= hist[i-20].CE
		}
		avg[i] = plotter.XY{X: float64(r.Step), Y: sum / float64(min(i+1, 20))}
	}
	for _, s := range []struct {
		name string
		xy   plotter.XYs
		gray uint8
	}{{"cross-entropy", ce, 190}, {"cross-entropy, mean of 20", avg, 0}, {"KL(teacher || student)", kl, 120}} {
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return fmt.Errorf("train: plot: %w", err)
		}
		l.Color = grayColor(s.gray)
		if s.name == "KL(teacher || student)" {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Legend.Top = true // top right, below the curves' start, inside the canvas
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(28), -vg.Points(48)
	wt, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("train: plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}
