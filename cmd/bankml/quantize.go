package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/fsutil"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/ternary"
)

// quantizeCmd is `bankml quantize IN.gguf OUT.gguf --type T`: a float (or quantized) model to ternary, streamed
// one tensor at a time (package ternary).
type quantizeCmd struct {
	In         string      `arg:"" name:"IN.gguf" type:"path" help:"Model to convert (any tensor type bankml reads)."`
	Out        string      `arg:"" name:"OUT.gguf" type:"path" optional:"" help:"File to write, through a temporary file beside it (not needed with --dry-run)."`
	Positional []string    `arg:"" name:"llama-quantize-args" optional:"" help:"Not taken: llama-quantize's positional TYPE and NTHREADS (IN [OUT] TYPE [NTHREADS]) are refused with bankml's spelling, --type TYPE -t NTHREADS."`
	Type       string      `name:"type" required:"" help:"Target: tq2_0, tq1_0 or q2_0 (ggml's absmax encoders, byte-identical to llama.cpp's), or ptqtp (K trit-planes per matrix, Fucina's PTQTP); in any case, as llama-quantize, which also takes tq1_0, tq2_0 and q2_0 as their ftype numbers 36, 37 and 41."`
	Planes     int         `name:"planes" help:"ptqtp: trit-planes per matrix, 1 to 3 (default 2)."`
	DownPlanes int         `name:"down-planes" help:"ptqtp: planes for ffn_down matrices (default --planes)."`
	OPlanes    int         `name:"o-planes" help:"ptqtp: planes for attn_output matrices (default --planes)."`
	GroupSize  int         `name:"group-size" help:"ptqtp: weights per group: 256 (TQ2_0 planes, the default; Fucina's format) or 64 (Q2_0 planes, bankml only)."`
	Include    []string    `name:"include" placeholder:"GLOB" help:"Convert only the eligible matrices whose name matches GLOB (repeatable, comma-separated; a glob over the whole name such as 'blk.*.ffn_down.weight', or a plain substring such as ffn_down); replaces the default, which keeps token_embd and output.weight. Each pattern's match count is printed."`
	Exclude    []string    `name:"exclude" placeholder:"GLOB" help:"Keep the matrices whose name matches GLOB (repeatable, comma-separated; as --include)."`
	WarnRelErr float64     `name:"warn-rel-err" default:"0.5" placeholder:"X" help:"Flag a converted tensor whose relative reconstruction error (Frobenius) passes X (default 0.5; 0 disables the flag)."`
	DryRun     bool        `name:"dry-run" help:"Print the per-tensor plan and write nothing."`
	Threads    threadCount `name:"threads" short:"t" default:"${nproc}" help:"Worker threads (the output does not depend on them); 0 or less takes the number of logical CPUs, as llama.cpp; at most 512, ggml's GGML_MAX_N_THREADS)."`
	Force      bool        `name:"force" help:"Overwrite OUT if it exists (a regular file only)."`
}

// quantizeTypes are the targets --type takes: llama-quantize's names, matched in any case as its try_parse_ftype
// does, and their llama_ftype numbers (include/llama.h's LLAMA_FTYPE_MOSTLY_*), which it takes too; ptqtp is
// bankml's own and has none.
var quantizeTypes = []struct{ name, ftype string }{{"tq2_0", "37"}, {"tq1_0", "36"}, {"q2_0", "41"}, {"ptqtp", ""}}

// quantizeType is the target v names (its lower-case name), or false.
func quantizeType(v string) (string, bool) {
	for _, t := range quantizeTypes {
		if strings.EqualFold(v, t.name) || t.ftype != "" && v == t.ftype {
			return t.name, true
		}
	}
	return "", false
}

// Validate (kong's hook after parsing, before its check of required flags) refuses a directory as IN.gguf,
// reads --type in any case or as its ftype number, and refuses llama-quantize's positional forms, IN OUT TYPE
// [NTHREADS] and IN TYPE [NTHREADS], with bankml's spelling of what was typed.
func (c *quantizeCmd) Validate() error {
	if err := notDirectory("IN.gguf", c.In); err != nil {
		return err
	}
	hint := func(form, ty string, nthreads []string) error {
		s := "bankml quantize IN.gguf OUT.gguf --type " + ty
		if len(nthreads) > 0 {
			s += " -t " + nthreads[0]
		}
		return fmt.Errorf("llama-quantize's positional form %s is not taken: write %s", form, s)
	}
	if c.Type == "" && c.Out != "" {
		if ty, ok := quantizeType(filepath.Base(c.Out)); ok {
			return hint("IN TYPE [NTHREADS] (which writes ggml-model-TYPE.gguf beside IN)", ty, c.Positional)
		}
	}
	if len(c.Positional) > 0 {
		if ty, ok := quantizeType(c.Positional[0]); ok {
			return hint("IN OUT TYPE [NTHREADS]", ty, c.Positional[1:])
		}
		return fmt.Errorf("unexpected argument %s: bankml quantize takes IN.gguf and OUT.gguf (llama-quantize's TYPE and NTHREADS are --type and -t here)", c.Positional[0])
	}
	if c.Type != "" {
		ty, ok := quantizeType(c.Type)
		if !ok {
			return fmt.Errorf("--type %q: want tq2_0, tq1_0, q2_0 or ptqtp (in any case), or the llama-quantize ftype number of tq2_0, tq1_0 or q2_0: 37, 36 or 41", c.Type)
		}
		c.Type = ty
	}
	return nil
}

// Run plans the conversion, prints the plan (--dry-run) or streams the model to OUT with a progress bar on a
// terminal, a line per converted tensor and a summary.
func (c *quantizeCmd) Run(stdout io.Writer, stderr errWriter, sigs *signals) error {
	in, out := c.In, c.Out
	opt, desc, err := c.options()
	if err != nil {
		return err
	}
	if !c.DryRun {
		if err := checkOutput(in, out, c.Force); err != nil {
			return err
		}
	}
	src, err := openGGUF("quantize", in)
	if err != nil {
		return err
	}
	defer src.Close()
	plan, err := ternary.PlanExport(src, opt)
	var nothing *ternary.NothingError
	if err != nil && !errors.As(err, &nothing) {
		return fmt.Errorf("quantize: %w", err)
	}
	c.printMatches(stdout, plan)
	if c.DryRun {
		if _, err := io.WriteString(stdout, formatPlan(in, desc, plan)); err != nil {
			return err
		}
	}
	if nothing != nil {
		return fmt.Errorf("quantize: %w", nothing)
	}
	if len(plan.Larger) > 0 {
		tp := plan.Tensors[slices.IndexFunc(plan.Tensors, func(tp ternary.TensorPlan) bool { return tp.Source.Name == plan.Larger[0] })]
		fmt.Fprintf(stderr, "quantize: warning: %d tensors (the first %s) are %s at %.4g bits per weight, re-quantized to %s at %.4g bits per weight: the file grows and gets no more accurate\n",
			len(plan.Larger), tp.Source.Name, tp.Source.Type, ternary.BitsPerWeight(tp.Source.Type), strings.TrimPrefix(target(&tp), tp.Source.Type.String()+" -> "),
			ternary.BitsPerWeight(tp.Type)*float64(max(tp.Planes, 1)))
	}
	if c.DryRun {
		return nil
	}

	ctx, stop := sigs.notifyContext(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	pool := parallel.New(int(c.Threads))
	defer pool.Close()
	bar := newBar(stderr, int64(plan.InBytes), "quantize "+filepath.Base(out))
	high := 0 // tensors past --warn-rel-err
	say := func(line string) {
		if bar != nil {
			_ = bar.Clear()
		}
		fmt.Fprintln(stdout, line)
	}
	hooks := ternary.ExportHooks{
		Pool:    pool,
		Release: ternary.ReleaseMapped,
		Tensor: func(d ternary.TensorDone) {
			if d.Plan.Action != ternary.ActionKeep {
				line := tensorLine(d)
				if c.WarnRelErr > 0 && !(d.Stats.RelFrobErr <= c.WarnRelErr) {
					line += fmt.Sprintf("  HIGH ERROR (rel_err above --warn-rel-err %g)", c.WarnRelErr)
					high++
				}
				say(fmt.Sprintf("[%d/%d] %s", d.Index+1, len(plan.Tensors), line))
			}
		},
	}
	if bar != nil {
		hooks.Progress = func(n int64) { _ = bar.Add64(n) }
	}
	start := time.Now()
	size, err := fsutil.WriteAtomic(ctx, out, func(w io.Writer) error { return ternary.Export(ctx, src, plan, w, hooks) })
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	rss := "not reported"
	if n, ok := ternary.PeakRSS(); ok {
		rss = mib(n)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: %d bytes in %.1f s; %d tensors converted%s, %d kept; tensors %s -> %s; peak RSS %s\n",
		out, size, time.Since(start).Seconds(), plan.Converted, planeCount(plan), len(plan.Tensors)-plan.Converted,
		mib(plan.InBytes), mib(plan.OutBytes), rss)
	if err == nil && high > 0 {
		hint := ""
		if c.Type != "ptqtp" {
			hint = " (--type ptqtp --planes 2 keeps far more of each matrix)"
		}
		fmt.Fprintf(stderr, "quantize: warning: %d of %d converted tensors have a relative error above %g: the model may answer poorly%s; measure it with bankml perplexity\n",
			high, plan.Converted, c.WarnRelErr, hint)
	}
	return err
}

// printMatches prints, per --include and --exclude pattern, how many tensors of the model its glob matches, and a
// warning for a pattern that matches none.
func (c *quantizeCmd) printMatches(stdout io.Writer, plan *ternary.Plan) {
	for _, f := range []struct {
		flag     string
		patterns []string
		n        []int
	}{{"--include", c.Include, plan.IncludeMatches}, {"--exclude", c.Exclude, plan.ExcludeMatches}} {
		for i, p := range f.patterns {
			note := ""
			if f.n[i] == 0 {
				note = " (matches nothing: check the name with bankml inspect)"
			}
			fmt.Fprintf(stdout, "%s %q: %d tensors%s\n", f.flag, p, f.n[i], note)
		}
	}
}

// options turns the flags into the exporter's options and a description of the target.
func (c *quantizeCmd) options() (ternary.ExportOptions, string, error) {
	opt := ternary.ExportOptions{Include: c.Include, Exclude: c.Exclude}
	if c.WarnRelErr < 0 || math.IsNaN(c.WarnRelErr) {
		return opt, "", fmt.Errorf("quantize: --warn-rel-err: value %g out of range [0, inf)", c.WarnRelErr)
	}
	if c.Type != "ptqtp" {
		if c.Planes != 0 || c.DownPlanes != 0 || c.OPlanes != 0 || c.GroupSize != 0 {
			return opt, "", fmt.Errorf("quantize: --planes, --down-planes, --o-planes and --group-size go with --type ptqtp")
		}
		switch c.Type {
		case "tq2_0":
			opt.Target = gguf.TQ2_0
		case "tq1_0":
			opt.Target = gguf.TQ1_0
		default:
			opt.Target = gguf.Q2_0
		}
		return opt, c.Type, nil
	}
	for _, f := range []struct {
		name, zero string
		k          int
	}{{"--planes", "0: the default, 2", c.Planes}, {"--down-planes", "0: --planes", c.DownPlanes}, {"--o-planes", "0: --planes", c.OPlanes}} {
		if f.k != 0 && (f.k < 1 || f.k > 3) {
			return opt, "", fmt.Errorf("quantize: %w", outOfRange(f.name, f.k, 1, 3, "trit-planes per matrix; "+f.zero))
		}
	}
	p := ternary.DefaultOptions()
	if c.Planes != 0 {
		p.Planes = c.Planes
	}
	if c.GroupSize != 0 {
		p.GroupSize = c.GroupSize
	}
	if err := p.Validate(); err != nil {
		return opt, "", fmt.Errorf("quantize: --planes/--group-size: %w", err)
	}
	opt.PTQTP, opt.DownPlanes, opt.OPlanes = &p, c.DownPlanes, c.OPlanes
	desc := fmt.Sprintf("ptqtp K=%d", p.Planes)
	if c.DownPlanes != 0 {
		desc += fmt.Sprintf(", ffn_down K=%d", c.DownPlanes)
	}
	if c.OPlanes != 0 {
		desc += fmt.Sprintf(", attn_output K=%d", c.OPlanes)
	}
	desc += fmt.Sprintf(", groups of %d (%s planes)", p.GroupSize, p.PlaneFormat().Type)
	return opt, desc, nil
}

// mib formats a byte count in MiB (KiB below 1 MiB).
func mib(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
}

func planeCount(p *ternary.Plan) string {
	if p.PlaneTensors == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d plane tensors)", p.PlaneTensors)
}

// shape formats ggml dimensions as bankml inspect does: [ne0, ne1].
func shape(ne []int64) string {
	s := make([]string, len(ne))
	for i, d := range ne {
		s[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// target formats a tensor plan's conversion: "f16 -> tq2_0", "f16 -> tq2_0 x2".
func target(tp *ternary.TensorPlan) string {
	s := tp.Source.Type.String() + " -> " + tp.Type.String()
	if tp.Action == ternary.ActionPlanes {
		s += fmt.Sprintf(" x%d", tp.Planes)
	}
	return s
}

// formatPlan is the --dry-run output: one line per tensor, then the totals and the memory estimate.
func formatPlan(in, desc string, p *ternary.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %s -> %s (dry run: nothing written)\n", in, desc)
	width := 0
	for i := range p.Tensors {
		width = max(width, len(p.Tensors[i].Source.Name))
	}
	for i := range p.Tensors {
		tp := &p.Tensors[i]
		name := fmt.Sprintf("%-*s %-15s", width, tp.Source.Name, shape(tp.Source.Ne))
		if tp.Action == ternary.ActionKeep {
			fmt.Fprintf(&b, "  keep     %s %-17s %s (%s)\n", name, tp.Source.Type, mib(tp.InBytes), tp.Reason)
		} else {
			fmt.Fprintf(&b, "  convert  %s %-17s %s -> %s\n", name, target(tp), mib(tp.InBytes), mib(tp.OutBytes))
		}
	}
	fmt.Fprintf(&b, "tensors: %d: %d converted%s, %d kept\n", len(p.Tensors), p.Converted, planeCount(p), len(p.Tensors)-p.Converted)
	fmt.Fprintf(&b, "bytes: %s -> %s; converted tensors %s -> %s\n", mib(p.InBytes), mib(p.OutBytes), mib(p.QuantInBytes), mib(p.QuantOutBytes))
	if p.PeakTensor != "" {
		fmt.Fprintf(&b, "peak memory estimate: %s (%s's decoded rows and output, the metadata and the 1 MiB write buffer)\n", mib(p.PeakBytes), p.PeakTensor)
	} else {
		fmt.Fprintf(&b, "peak memory estimate: %s (the metadata and the write buffer: nothing to convert)\n", mib(p.PeakBytes))
	}
	return b.String()
}

// tensorLine is the diagnostic line of one converted tensor.
func tensorLine(d ternary.TensorDone) string {
	tp, st := d.Plan, d.Stats
	s := fmt.Sprintf("%s %s %s  rel_err %.4f", tp.Source.Name, shape(tp.Source.Ne), target(tp), st.RelFrobErr)
	if tp.Action == ternary.ActionPlanes {
		z := make([]string, tp.Planes)
		for i := range z {
			z[i] = fmt.Sprintf("%.3f", st.ZeroFrac[i])
		}
		s += fmt.Sprintf("  zeros %s  iters %.1f  unconverged %d/%d", strings.Join(z, "/"), st.MeanIterations, st.UnconvergedGroups, st.Groups)
	}
	if d.NonFinite > 0 {
		s += fmt.Sprintf("  non-finite %d", d.NonFinite)
	}
	return s + fmt.Sprintf("  %s -> %s  %.2f s", mib(tp.InBytes), mib(tp.OutBytes), d.Duration.Seconds())
}

// newBar returns a progress bar over total bytes drawn on stderr, or nil when stderr is not a terminal.
func newBar(stderr errWriter, total int64, desc string) *progressbar.ProgressBar {
	f, ok := io.Writer(stderr).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionUseANSICodes(true),
	)
}

// checkOutput refuses a missing OUT, OUT naming IN, a special file, or an existing OUT without --force.
func checkOutput(in, out string, force bool) error {
	if out == "" {
		return errors.New("quantize: OUT.gguf is required (or --dry-run)")
	}
	st, err := os.Lstat(out)
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil // a missing folder, or a file where one is: fsutil.WriteAtomic's error names OUT and the folder
	case err != nil:
		return fmt.Errorf("quantize: %w", err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("quantize: %s is not a regular file: it is %s (OUT.gguf names the file to write)", out, fsutil.Kind(st.Mode()))
	}
	if ist, err := os.Stat(in); err == nil && os.SameFile(ist, st) {
		return fmt.Errorf("quantize: OUT %s is the input file", out)
	}
	if !force {
		return fmt.Errorf("quantize: %s exists (use --force to overwrite it)", out)
	}
	return nil
}
