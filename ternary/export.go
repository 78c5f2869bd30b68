package ternary

import (
	"context"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// ExportOptions say what Export makes of a model.
type ExportOptions struct {
	// Target is the block type the ggml encoders write: gguf.TQ2_0, gguf.TQ1_0 or gguf.Q2_0. Ignored with PTQTP.
	Target gguf.GGMLType
	// PTQTP, when set, stores every eligible matrix as trit-planes solved with these options (PTQTP.Planes is K).
	PTQTP *Options
	// DownPlanes and OPlanes override PTQTP.Planes for the matrices that write the residual stream, those whose
	// names contain "ffn_down" and "attn_output" (0 keeps PTQTP.Planes): Fucina's down_planes and o_planes.
	DownPlanes, OPlanes int
	// Include, when not empty, replaces the default name policy (every eligible matrix but token_embd and
	// output.weight): only eligible matrices whose name matches one of the patterns are converted. Exclude
	// always removes the matrices whose name matches one of its patterns. A pattern is a glob over the whole
	// tensor name (path.Match: "blk.*.ffn_down.weight", "blk.1?.*"); one without the glob characters * ? [ \
	// matches the names that contain it, as Fucina's --ptqtp-include/-exclude substrings did.
	Include, Exclude []string
}

// Action is what Export does with one tensor.
type Action int

// The actions.
const (
	ActionKeep   Action = iota // copied byte for byte
	ActionEncode               // re-encoded with a ggml encoder (EncodeTQ2_0, EncodeTQ1_0, EncodeQ2_0)
	ActionPlanes               // replaced by its PTQTP planes "<name>.ptqtp0" …
)

// TensorPlan is the plan for one source tensor.
type TensorPlan struct {
	Source    gguf.TensorInfo
	Action    Action
	Type      gguf.GGMLType // the output type: the source's (Keep), the target (Encode), the planes' (Planes)
	Planes    int           // Planes: K
	Reason    string        // Keep: why the tensor stays as it is
	InBytes   uint64        // the source tensor's bytes
	OutBytes  uint64        // the bytes written for it (all planes)
	WorkBytes uint64        // memory it needs while converted: decoded rows, encoded output, source rows mapped
}

// Plan is what Export will write: every source tensor's plan, in file order, and the output's metadata and tensor
// list.
type Plan struct {
	Tensors []TensorPlan
	KVs     []gguf.KV         // the source's metadata in order, with general.file_type, general.quantization_version and (PTQTP) fucina.ptqtp.version set
	Out     []gguf.TensorInfo // the output tensors (names, shapes, types) in order

	InBytes, OutBytes           uint64  // tensor data in and out
	QuantInBytes, QuantOutBytes uint64  // of the converted tensors
	Converted, PlaneTensors     int     // tensors converted, plane tensors written
	PeakBytes                   uint64  // estimated memory held at once: the largest WorkBytes plus the writer's 1 MiB buffer
	PeakTensor                  string  // the tensor with the largest WorkBytes ("" when nothing is converted)
	FileType                    uint32  // general.file_type written (llama_ftype), when Converted > 0
	Solver                      Options // the PTQTP options (each TensorPlan's Planes overrides Planes); zero for the encoders
	// IncludeMatches and ExcludeMatches count, per pattern of ExportOptions.Include and Exclude (same order),
	// the source tensors whose name it matches, whether or not they are eligible.
	IncludeMatches, ExcludeMatches []int
	// Larger lists the converted tensors whose source type takes no more bits per weight than their output
	// (a low-bit source re-quantized to a larger format: bigger and no more accurate).
	Larger []string
}

// NothingError is PlanExport's error when no tensor would be converted: the tally of the reasons the tensors are
// kept, most frequent first, and a hint when rows that are not whole blocks are the obstacle.
type NothingError struct {
	Tensors int      // tensors in the source
	Reasons []string // "30 rows of 64 are not whole 256-weight blocks", … (counts and reasons)
	Hint    string   // what to try, or ""
}

// Error is "0 of 48 tensors eligible: 30 rows of 64 …, 18 a norm; try --group-size 64".
func (e *NothingError) Error() string {
	s := fmt.Sprintf("0 of %d tensors eligible: %s", e.Tensors, strings.Join(e.Reasons, ", "))
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// BitsPerWeight is a ggml type's storage per weight in bits (TypeSize*8/BlockSize): 16 for F16, 2.0625 for TQ2_0.
func BitsPerWeight(t gguf.GGMLType) float64 {
	return float64(t.TypeSize()) * 8 / float64(t.BlockSize())
}

// matchName reports whether the tensor name matches pattern (see ExportOptions.Include). The pattern must be valid
// (checkPatterns).
func matchName(pattern, name string) bool {
	if pattern == "" {
		return false
	}
	if !strings.ContainsAny(pattern, `*?[\`) {
		return strings.Contains(name, pattern)
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// checkPatterns refuses an empty or malformed glob, naming the flag and the pattern.
func checkPatterns(flag string, patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return fmt.Errorf("ternary: an empty %s pattern", flag)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("ternary: %s pattern %q: %w", flag, p, err)
		}
	}
	return nil
}

// chunkBytes is about how many bytes of f32 rows Export decodes at a time; keepBytes how many bytes of a kept
// tensor it copies at a time.
const (
	chunkBytes  = 16 << 20
	keepBytes   = 4 << 20
	writeBuffer = 1 << 20 // gguf.Writer's buffer
	faultBack   = 256 << 10
)

// fileTypes are llama_ftype (include/llama.h) of the formats written: MOSTLY_TQ1_0, MOSTLY_TQ2_0, MOSTLY_Q2_0.
var fileTypes = map[gguf.GGMLType]uint32{gguf.TQ1_0: 36, gguf.TQ2_0: 37, gguf.Q2_0: 41}

// chunkRows returns the rows of cols weights decoded at a time.
func chunkRows(rows, cols int) int { return max(1, min(rows, chunkBytes/(4*cols))) }

// PlanExport decides, for every tensor of src, what Export does with it, and returns the plan. A tensor is
// converted when it is a 2-D ".weight" tensor whose name does not contain "norm", whose rows (ne[0]) are whole
// blocks of the output format (256 weights for TQ2_0, TQ1_0 and 256-groups; 64 for Q2_0 and 64-groups), whose
// type bankml decodes (quant.Matrix), which the name policy of opt selects, and which is not already of the target
// type (Encode) — and, for PTQTP, whose plane names fit GGUF's 63 bytes. The others are kept, with the reason.
// Errors: bad options (an unknown target, invalid PTQTP options, plane counts outside 1..3, a malformed
// --include/--exclude glob), and a *NothingError, returned with the plan, when no tensor would be converted.
func PlanExport(src *gguf.File, opt ExportOptions) (*Plan, error) {
	if err := checkPatterns("include", opt.Include); err != nil {
		return nil, err
	}
	if err := checkPatterns("exclude", opt.Exclude); err != nil {
		return nil, err
	}
	var f Format
	if opt.PTQTP != nil {
		if err := opt.PTQTP.Validate(); err != nil {
			return nil, err
		}
		for _, k := range []int{opt.DownPlanes, opt.OPlanes} {
			if k < 0 || k > 3 {
				return nil, fmt.Errorf("ternary: plane override %d, want 1, 2 or 3 (0: the default)", k)
			}
		}
		f = opt.PTQTP.PlaneFormat()
	} else {
		var ok bool
		if f, ok = FormatOf(opt.Target); !ok {
			return nil, fmt.Errorf("ternary: no encoder for %s (have tq2_0, tq1_0, q2_0)", opt.Target)
		}
	}
	p := &Plan{}
	if opt.PTQTP != nil {
		p.Solver = *opt.PTQTP
	}
	for i := range src.Tensors {
		ti := src.Tensors[i]
		tp := TensorPlan{Source: ti, Action: ActionKeep, Type: ti.Type, InBytes: ti.Size, OutBytes: ti.Size}
		tp.Reason = keepReason(src, &ti, f, opt)
		if tp.Reason == "" {
			rows, cols := int(ti.Ne[1]), int(ti.Ne[0])
			outRow := uint64(f.RowBytes(cols))
			cr := uint64(chunkRows(rows, cols))
			srcRow := ti.Size / uint64(rows)
			tp.Type = f.Type
			if opt.PTQTP != nil {
				tp.Action, tp.Planes = ActionPlanes, planesFor(ti.Name, opt)
				tp.OutBytes = uint64(tp.Planes) * uint64(rows) * outRow
				tp.WorkBytes = tp.OutBytes + uint64(rows)*rowStatBytes + cr*(4*uint64(cols)+srcRow)
				p.PlaneTensors += tp.Planes
				for k := range tp.Planes {
					p.Out = append(p.Out, gguf.TensorInfo{Name: PlaneName(ti.Name, k), Ne: ti.Ne, Type: f.Type})
				}
			} else {
				tp.Action = ActionEncode
				tp.OutBytes = uint64(rows) * outRow
				tp.WorkBytes = cr * (4*uint64(cols) + outRow + srcRow)
			}
			p.Converted++
			p.QuantInBytes += tp.InBytes
			p.QuantOutBytes += tp.OutBytes
			if tp.WorkBytes > p.PeakBytes {
				p.PeakBytes, p.PeakTensor = tp.WorkBytes, ti.Name
			}
		}
		if tp.Action != ActionPlanes {
			p.Out = append(p.Out, gguf.TensorInfo{Name: ti.Name, Ne: ti.Ne, Type: tp.Type})
		}
		p.InBytes += tp.InBytes
		p.OutBytes += tp.OutBytes
		p.Tensors = append(p.Tensors, tp)
	}
	p.IncludeMatches, p.ExcludeMatches = countMatches(src, opt.Include), countMatches(src, opt.Exclude)
	if p.Converted == 0 && len(src.Tensors) > 0 {
		return p, nothingToConvert(p, f, opt)
	}
	for i := range p.Tensors {
		tp := &p.Tensors[i]
		if tp.Action == ActionKeep {
			continue
		}
		out := BitsPerWeight(tp.Type) * float64(max(tp.Planes, 1))
		if BitsPerWeight(tp.Source.Type) <= out {
			p.Larger = append(p.Larger, tp.Source.Name)
		}
	}
	p.PeakBytes += writeBuffer + src.DataOffset // and the metadata, held in memory: about the header's size
	p.KVs = append([]gguf.KV(nil), src.KVs...)
	if p.Converted > 0 {
		p.FileType = fileTypes[f.Type]
		setKV(&p.KVs, "general.file_type", gguf.Uint32Value(p.FileType))
		setKV(&p.KVs, "general.quantization_version", gguf.Uint32Value(2))
	}
	if p.PlaneTensors > 0 {
		setKV(&p.KVs, VersionKey, gguf.Uint32Value(Version))
	}
	return p, nil
}

// rowStatBytes is the size of one row's PTQTP diagnostics (rowStat and its done flag), rounded up.
const rowStatBytes = 64

// countMatches counts, per pattern, the tensors of src whose name it matches.
func countMatches(src *gguf.File, patterns []string) []int {
	n := make([]int, len(patterns))
	for i, p := range patterns {
		for j := range src.Tensors {
			if matchName(p, src.Tensors[j].Name) {
				n[i]++
			}
		}
	}
	return n
}

// nothingToConvert is the *NothingError of a plan that converts nothing (PlanExport returns the plan with it).
func nothingToConvert(p *Plan, f Format, opt ExportOptions) error {
	tally := map[string]int{}
	var order []string
	blocks := false
	for i := range p.Tensors {
		r := p.Tensors[i].Reason
		if strings.HasPrefix(r, "rows of ") {
			blocks = true
		}
		if tally[r] == 0 {
			order = append(order, r)
		}
		tally[r]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return tally[b] - tally[a] })
	e := &NothingError{Tensors: len(p.Tensors)}
	for _, r := range order {
		e.Reasons = append(e.Reasons, fmt.Sprintf("%d %s", tally[r], r))
	}
	switch {
	case blocks && f.Block == 256 && opt.PTQTP != nil:
		e.Hint = "try --group-size 64"
	case blocks && f.Block == 256:
		e.Hint = "try --type q2_0 (blocks of 64) or --type ptqtp --group-size 64"
	case len(opt.Include) > 0:
		e.Hint = "check the --include patterns"
	}
	return e
}

// setKV replaces the value of key in kvs in place, or appends it.
func setKV(kvs *[]gguf.KV, key string, v gguf.Value) {
	for i := range *kvs {
		if (*kvs)[i].Key == key {
			(*kvs)[i].Value = v
			return
		}
	}
	*kvs = append(*kvs, gguf.KV{Key: key, Value: v})
}

// planesFor returns K for the matrix name.
func planesFor(name string, opt ExportOptions) int {
	switch {
	case opt.DownPlanes > 0 && strings.Contains(name, "ffn_down"):
		return opt.DownPlanes
	case opt.OPlanes > 0 && strings.Contains(name, "attn_output"):
		return opt.OPlanes
	}
	return opt.PTQTP.Planes
}

// keepReason returns why ti is kept, or "" when it is converted to format f.
func keepReason(src *gguf.File, ti *gguf.TensorInfo, f Format, opt ExportOptions) string {
	contains := func(patterns []string) bool {
		for _, p := range patterns {
			if matchName(p, ti.Name) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.Contains(ti.Name, "norm"):
		return "a norm"
	case len(ti.Ne) != 2:
		return fmt.Sprintf("%d-D, not a matrix", len(ti.Ne))
	case !strings.HasSuffix(ti.Name, ".weight"):
		return "not a .weight"
	case ti.Name == "position_embd.weight" || ti.Name == "token_types.weight":
		// llama-quant.cpp never quantizes them (bert's graph adds token_types' row 0 as F32).
		return "absolute positions or token types (kept as llama-quant keeps them)"
	case len(opt.Include) == 0 && strings.Contains(ti.Name, "token_embd"):
		return "token embedding (kept unless --include selects it)"
	case len(opt.Include) == 0 && ti.Name == "output.weight":
		return "output (kept unless --include selects it)"
	case len(opt.Include) > 0 && !contains(opt.Include):
		return "not --include'd"
	case contains(opt.Exclude):
		return "--exclude'd"
	case ti.Ne[0]%int64(f.Block) != 0:
		return fmt.Sprintf("rows of %d are not whole %d-weight blocks", ti.Ne[0], f.Block)
	case opt.PTQTP == nil && ti.Type == f.Type:
		return "already " + f.Type.String()
	case opt.PTQTP != nil && len(PlaneName(ti.Name, 2)) > 63:
		return "plane names would pass GGUF's 63 bytes"
	}
	m := quant.Matrix{Name: ti.Name, Type: ti.Type, Rows: int(ti.Ne[1]), Cols: int(ti.Ne[0]), Data: src.TensorData(ti)}
	if err := m.Supported(); err != nil {
		return "bankml cannot decode " + ti.Type.String()
	}
	return ""
}

// ExportHooks are what Export reports to and runs on; every field may be nil.
type ExportHooks struct {
	Pool     *parallel.Pool   // shares rows between workers (nil: the calling goroutine); the output does not depend on it
	Release  func(b []byte)   // called with each range of source tensor data once it is read (ReleaseMapped for a gguf.Open file)
	Progress func(n int64)    // called with the source bytes done since the last call
	Tensor   func(TensorDone) // called after each tensor is written
}

// TensorDone reports one written tensor.
type TensorDone struct {
	Index     int         // in Plan.Tensors
	Plan      *TensorPlan // its plan
	Stats     MatrixStats // Planes: the solver's diagnostics; Encode: RelFrobErr of the encoded tensor only
	NonFinite int         // NaN and ±inf weights in the source (converted tensors)
	Duration  time.Duration
}

// Export writes the model plan describes to w as a GGUF file, one tensor at a time in file order: a kept tensor is
// copied in pieces of 4 MiB; a converted one is decoded to float32 in chunks of about 16 MiB of rows
// (quant.Matrix.Row, any type bankml reads), encoded (Encode: rows in parallel, each row exactly as the encoder
// writes it) or solved (Planes: PlaneSet.QuantizeRows, its K planes held until the tensor is done, then written
// plane after plane), each source range passed to hooks.Release once read. So memory stays near the plan's
// PeakBytes whatever the model's size. It stops with ctx's error when ctx is done (between chunks); errors of w are
// returned wrapped, and w then holds a partial file. plan must be PlanExport's for src (checked by tensor name,
// offset and size). The output is a pure function of src and the plan: the same bytes for any pool size.
func Export(ctx context.Context, src *gguf.File, plan *Plan, w io.Writer, hooks ExportHooks) error {
	if len(plan.Tensors) != len(src.Tensors) {
		return fmt.Errorf("ternary: a plan of %d tensors for a file of %d: not this file's plan", len(plan.Tensors), len(src.Tensors))
	}
	for i := range plan.Tensors {
		if a, b := &plan.Tensors[i].Source, &src.Tensors[i]; a.Name != b.Name || a.Offset != b.Offset || a.Size != b.Size {
			return fmt.Errorf("ternary: tensor %d is %q in the plan, %q in the file: not this file's plan", i, a.Name, b.Name)
		}
	}
	gw, err := gguf.NewWriter(w, plan.KVs, plan.Out)
	if err != nil {
		return fmt.Errorf("ternary: %w", err)
	}
	// release passes data[lo:hi], once read, to hooks.Release, with the faultBack bytes before it: reading a mapped
	// page also maps its neighbours (the kernel's fault-around, 64 KiB by default), some of which were released
	// already.
	release := func(data []byte, lo, hi int) {
		if hooks.Release != nil {
			hooks.Release(data[max(0, lo-faultBack):hi])
		}
		if hooks.Progress != nil {
			hooks.Progress(int64(hi - lo))
		}
	}
	for i := range plan.Tensors {
		tp := &plan.Tensors[i]
		start := time.Now()
		data := src.TensorData(&tp.Source)
		if data == nil {
			return fmt.Errorf("ternary: tensor %q: no data", tp.Source.Name)
		}
		done := TensorDone{Index: i, Plan: tp}
		switch tp.Action {
		case ActionKeep:
			for off := 0; off < len(data); off += keepBytes {
				if err := ctx.Err(); err != nil {
					return err
				}
				end := min(len(data), off+keepBytes)
				if _, err := gw.Write(data[off:end]); err != nil {
					return fmt.Errorf("ternary: %w", err)
				}
				release(data, off, end)
			}
		case ActionEncode:
			if done, err = encodeTensor(ctx, gw, tp, data, hooks.Pool, release); err != nil {
				return err
			}
		case ActionPlanes:
			if done, err = planeTensor(ctx, gw, tp, plan.Solver, data, hooks.Pool, release); err != nil {
				return err
			}
		}
		if hooks.Release != nil { // the earlier tensors' pages that reading this one mapped again
			for j, back := i-1, 0; j >= 0 && back < faultBack; j-- {
				d := src.TensorData(&plan.Tensors[j].Source)
				hooks.Release(d)
				back += len(d)
			}
		}
		done.Index, done.Plan, done.Duration = i, tp, time.Since(start)
		if hooks.Tensor != nil {
			hooks.Tensor(done)
		}
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("ternary: %w", err)
	}
	return nil
}

// matrixOf returns the source view of a planned tensor.
func matrixOf(tp *TensorPlan, data []byte) quant.Matrix {
	return quant.Matrix{Name: tp.Source.Name, Type: tp.Source.Type, Rows: int(tp.Source.Ne[1]), Cols: int(tp.Source.Ne[0]), Data: data}
}

// rowErr holds one row's share of the relative error and non-finite count.
type rowErr struct {
	err, w2   float64
	nonFinite int
}

// measure adds to e the squared error of rec against the finite weights of w, and counts the others.
func (e *rowErr) measure(w, rec []float32) {
	for j, v := range w {
		if !isFinite(v) {
			e.nonFinite++
			continue
		}
		d := float64(v) - float64(rec[j])
		e.err += float64(d * d)
		e.w2 += float64(float64(v) * float64(v))
	}
}

// encodeTensor streams one tensor through its ggml encoder.
func encodeTensor(ctx context.Context, gw *gguf.Writer, tp *TensorPlan, data []byte, pool *parallel.Pool, release func(data []byte, lo, hi int)) (TensorDone, error) {
	m := matrixOf(tp, data)
	f, _ := FormatOf(tp.Type)
	srcRow, outRow := m.RowBytes(), f.RowBytes(m.Cols)
	cr := chunkRows(m.Rows, m.Cols)
	x := make([]float32, cr*m.Cols)
	out := make([]byte, cr*outRow)
	errs := make([]rowErr, m.Rows)
	encode := rowEncoder(f.Type)
	for first := 0; first < m.Rows; first += cr {
		if err := ctx.Err(); err != nil {
			return TensorDone{}, err
		}
		n := min(cr, m.Rows-first)
		pool.For(n, func(lo, hi int) {
			rec := make([]float32, m.Cols)
			for r := lo; r < hi; r++ {
				row := x[r*m.Cols : (r+1)*m.Cols]
				m.Row(first+r, row)
				dst := out[r*outRow : (r+1)*outRow]
				encode(row, dst)
				dequantize(f.Type, dst, rec)
				errs[first+r].measure(row, rec)
			}
		})
		if _, err := gw.Write(out[:n*outRow]); err != nil {
			return TensorDone{}, fmt.Errorf("ternary: %w", err)
		}
		release(data, first*srcRow, (first+n)*srcRow)
	}
	var done TensorDone
	var e, w2 float64
	for _, r := range errs {
		e += r.err
		w2 += r.w2
		done.NonFinite += r.nonFinite
	}
	if w2 > 0 {
		done.Stats.RelFrobErr = math.Sqrt(e / w2)
	}
	done.Stats.Groups = m.Rows * (m.Cols / f.Block)
	return done, nil
}

// planeTensor streams one tensor through the PTQTP solver and writes its planes.
func planeTensor(ctx context.Context, gw *gguf.Writer, tp *TensorPlan, opt Options, data []byte, pool *parallel.Pool, release func(data []byte, lo, hi int)) (TensorDone, error) {
	m := matrixOf(tp, data)
	opt.Planes = tp.Planes
	ps, err := NewPlaneSet(m.Rows, m.Cols, opt)
	if err != nil {
		return TensorDone{}, err
	}
	srcRow := m.RowBytes()
	cr := chunkRows(m.Rows, m.Cols)
	x := make([]float32, cr*m.Cols)
	nonFinite := make([]int, m.Rows)
	for first := 0; first < m.Rows; first += cr {
		if err := ctx.Err(); err != nil {
			return TensorDone{}, err
		}
		n := min(cr, m.Rows-first)
		pool.For(n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				row := x[r*m.Cols : (r+1)*m.Cols]
				m.Row(first+r, row)
				for _, v := range row {
					if !isFinite(v) {
						nonFinite[first+r]++
					}
				}
			}
		})
		release(data, first*srcRow, (first+n)*srcRow)
		if err := ps.QuantizeRows(first, x[:n*m.Cols], pool); err != nil {
			return TensorDone{}, err
		}
	}
	x = nil
	var done TensorDone
	if done.Stats, err = ps.Stats(); err != nil {
		return TensorDone{}, err
	}
	for _, n := range nonFinite {
		done.NonFinite += n
	}
	for _, plane := range ps.Planes {
		if err := gw.WriteTensor(plane); err != nil {
			return TensorDone{}, fmt.Errorf("ternary: %w", err)
		}
	}
	return done, nil
}
