package ternary

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// tinyModel returns the bytes of a tiny synthetic qwen3 model (rows of 256 and 512) with weights of type ty.
func tinyModel(t testing.TB, ty gguf.GGMLType, seed uint64) []byte {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := synth.Write(&b, synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: ty, Embd: ty, Output: ty, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// export runs PlanExport and Export over src in memory.
func export(t testing.TB, src []byte, opt ExportOptions, pool *parallel.Pool) []byte {
	t.Helper()
	f, err := gguf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanExport(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Export(context.Background(), f, plan, &out, ExportHooks{Pool: pool}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func ptqtpOpt(k, g int) *Options {
	o := DefaultOptions()
	o.Planes, o.GroupSize = k, g
	return &o
}

var exportCases = []struct {
	name string
	opt  ExportOptions
}{
	{"tq2_0", ExportOptions{Target: gguf.TQ2_0}},
	{"tq1_0", ExportOptions{Target: gguf.TQ1_0}},
	{"q2_0", ExportOptions{Target: gguf.Q2_0}},
	{"ptqtp K=2", ExportOptions{PTQTP: ptqtpOpt(2, 256)}},
	{"ptqtp K=3 down 1", ExportOptions{PTQTP: ptqtpOpt(3, 256), DownPlanes: 1, OPlanes: 2}},
	{"ptqtp K=2 groups of 64", ExportOptions{PTQTP: ptqtpOpt(2, 64)}},
}

// TestExportIsDeterministicAndIdempotent: a 1-bit (Q1_0) model quantized twice, on pools of 1 and 3 workers,
// gives the same bytes for every target; and quantizing the result again with the same options converts nothing
// (a *NothingError: converted tensors are already of the target type or are planes, never converted again).
func TestExportIsDeterministicAndIdempotent(t *testing.T) {
	src := tinyModel(t, gguf.Q1_0, 3)
	pool := parallel.New(3)
	defer pool.Close()
	for _, tc := range exportCases {
		t.Run(tc.name, func(t *testing.T) {
			a := export(t, src, tc.opt, nil)
			b := export(t, src, tc.opt, pool)
			if !bytes.Equal(a, b) {
				t.Fatal("two runs (1 and 3 workers) wrote different bytes")
			}
			out, err := gguf.Parse(a)
			if err != nil {
				t.Fatal(err)
			}
			var nothing *NothingError
			if _, err := PlanExport(out, tc.opt); !errors.As(err, &nothing) {
				t.Fatalf("planning the output again: %v; want a *NothingError (nothing left to convert)", err)
			}
			if why := nothing.Error(); !strings.Contains(why, "already") && !strings.Contains(why, "not a .weight") {
				t.Fatalf("planning the output again: %q; want its converted tensors kept as already converted (or planes)", why)
			}
		})
	}
}

// TestExportWritesWhatThePlanSays: every converted tensor holds what the encoders (or QuantizeMatrix) make of the
// decoded source rows, kept tensors are byte-identical, the metadata is the source's with general.file_type,
// general.quantization_version and (planes) fucina.ptqtp.version set, and LoadPlanes reads the planes back.
func TestExportWritesWhatThePlanSays(t *testing.T) {
	src := tinyModel(t, gguf.F16, 5)
	in, err := gguf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range exportCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := gguf.Parse(export(t, src, tc.opt, nil))
			if err != nil {
				t.Fatal(err)
			}
			plan, _ := PlanExport(in, tc.opt)
			for i := range plan.Tensors {
				tp := &plan.Tensors[i]
				ti := &in.Tensors[i]
				var m quant.Matrix
				if tp.Action != ActionKeep {
					m = quant.Matrix{Name: ti.Name, Type: ti.Type, Rows: int(ti.Ne[1]), Cols: int(ti.Ne[0]), Data: in.TensorData(ti)}
				}
				switch tp.Action {
				case ActionKeep:
					o, ok := out.Tensor(ti.Name)
					if !ok || o.Type != ti.Type || !bytes.Equal(out.TensorData(o), in.TensorData(ti)) {
						t.Fatalf("%s: not kept byte for byte", ti.Name)
					}
				case ActionEncode:
					x := make([]float32, m.Rows*m.Cols)
					for r := range m.Rows {
						m.Row(r, x[r*m.Cols:(r+1)*m.Cols])
					}
					want := make([]byte, tp.OutBytes)
					if err := Encode(tp.Type, x, want); err != nil {
						t.Fatal(err)
					}
					o, ok := out.Tensor(ti.Name)
					if !ok || o.Type != tp.Type || !bytes.Equal(out.TensorData(o), want) {
						t.Fatalf("%s: encoded bytes differ", ti.Name)
					}
				case ActionPlanes:
					x := make([]float32, m.Rows*m.Cols)
					for r := range m.Rows {
						m.Row(r, x[r*m.Cols:(r+1)*m.Cols])
					}
					opt := plan.Solver
					opt.Planes = tp.Planes
					ps, _, err := QuantizeMatrix(x, m.Rows, m.Cols, opt, nil)
					if err != nil {
						t.Fatal(err)
					}
					l, err := LoadPlanes(out, ti.Name)
					if err != nil || l == nil || len(l.Planes) != tp.Planes || l.Rows() != m.Rows || l.Cols() != m.Cols {
						t.Fatalf("%s: LoadPlanes %v, %v", ti.Name, l, err)
					}
					for p, pm := range l.Planes {
						if pm.Type != ps.Format.Type || !bytes.Equal(pm.Data, ps.Planes[p]) || pm.Name != PlaneName(ti.Name, p) {
							t.Fatalf("%s: plane %d differs", ti.Name, p)
						}
					}
					if _, ok := out.Tensor(ti.Name); ok {
						t.Fatalf("%s: base tensor still written", ti.Name)
					}
				}
			}
			if n := len(PlaneSets(out)); n != plan.Converted && plan.PlaneTensors > 0 {
				t.Errorf("%d plane sets, %d converted", n, plan.Converted)
			}
			for _, kv := range in.KVs {
				v, ok := out.Get(kv.Key)
				switch kv.Key {
				case "general.file_type":
					if n, _ := v.Uint64(); uint32(n) != plan.FileType {
						t.Errorf("file type %d, want %d", n, plan.FileType)
					}
				default:
					if !ok || !reflect.DeepEqual(v, kv.Value) {
						t.Errorf("key %s changed", kv.Key)
					}
				}
			}
			if ver, ok, err := FileVersion(out); err != nil || ok != (plan.PlaneTensors > 0) || (ok && ver != Version) {
				t.Errorf("version %d %v %v", ver, ok, err)
			}
		})
	}
	wantTypes := map[string]uint32{"tq2_0": 37, "tq1_0": 36, "q2_0": 41, "ptqtp K=2": 37, "ptqtp K=2 groups of 64": 41}
	for _, tc := range exportCases {
		if want, ok := wantTypes[tc.name]; ok {
			if plan, _ := PlanExport(in, tc.opt); plan.FileType != want {
				t.Errorf("%s: general.file_type %d, want llama_ftype %d", tc.name, plan.FileType, want)
			}
		}
	}
}

// zeroFile returns a parsed GGUF file with the metadata and tensors given, all tensor bytes zero.
func zeroFile(t *testing.T, kvs []gguf.KV, tensors []gguf.TensorInfo) *gguf.File {
	t.Helper()
	var b bytes.Buffer
	w, err := gguf.NewWriter(&b, kvs, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range w.Tensors() {
		if err := w.WriteTensor(make([]byte, ti.Size)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPlanEligibility: the tensors that stay, and why; and what the name policy selects.
func TestPlanEligibility(t *testing.T) {
	kvs := []gguf.KV{{Key: "general.architecture", Value: gguf.StringValue("llama")}}
	tensors := []gguf.TensorInfo{
		{Name: "token_embd.weight", Ne: []int64{256, 4}, Type: gguf.F16},
		{Name: "blk.0.attn_norm.weight", Ne: []int64{256}, Type: gguf.F32},
		{Name: "blk.0.attn_q.weight", Ne: []int64{256, 4}, Type: gguf.F16},
		{Name: "blk.0.attn_q.bias", Ne: []int64{256, 1}, Type: gguf.F32},
		{Name: "blk.0.ffn_down.weight", Ne: []int64{320, 4}, Type: gguf.F32},
		{Name: "blk.0.ffn_up.weight", Ne: []int64{256, 4}, Type: gguf.TQ2_0},
		{Name: "blk.0.ffn_gate.weight", Ne: []int64{256, 4}, Type: gguf.IQ2_XS},
		{Name: "blk.0.attn_v.weight", Ne: []int64{256, 2, 2}, Type: gguf.F32},
		{Name: "blk.0.attn_k.weight", Ne: []int64{256, 4}, Type: gguf.BF16},
		{Name: "output.weight", Ne: []int64{256, 4}, Type: gguf.Q8_0},
		{Name: "a.very.long.tensor.name.that.is.fine.alone.but.not.weight", Ne: []int64{256, 4}, Type: gguf.F32},
		{Name: "a.very.long.tensor.name.that.is.fine.alone.but.not.x.weight", Ne: []int64{256, 4}, Type: gguf.F32},
	}
	f := zeroFile(t, kvs, tensors)
	reasons := func(opt ExportOptions) string {
		p, err := PlanExport(f, opt)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, tp := range p.Tensors {
			if tp.Action == ActionKeep {
				s = append(s, tp.Source.Name+": "+tp.Reason)
			} else {
				s = append(s, tp.Source.Name+": convert")
			}
		}
		return strings.Join(s, "\n")
	}
	got := reasons(ExportOptions{Target: gguf.TQ2_0})
	want := strings.Join([]string{
		"token_embd.weight: token embedding (kept unless --include selects it)",
		"blk.0.attn_norm.weight: a norm",
		"blk.0.attn_q.weight: convert",
		"blk.0.attn_q.bias: not a .weight",
		"blk.0.ffn_down.weight: rows of 320 are not whole 256-weight blocks",
		"blk.0.ffn_up.weight: already tq2_0",
		"blk.0.ffn_gate.weight: bankml cannot decode iq2_xs",
		"blk.0.attn_v.weight: 3-D, not a matrix",
		"blk.0.attn_k.weight: convert",
		"output.weight: output (kept unless --include selects it)",
		"a.very.long.tensor.name.that.is.fine.alone.but.not.weight: convert",
		"a.very.long.tensor.name.that.is.fine.alone.but.not.x.weight: convert",
	}, "\n")
	if got != want {
		t.Errorf("tq2_0 plan:\n%s\nwant\n%s", got, want)
	}
	got = reasons(ExportOptions{PTQTP: ptqtpOpt(2, 64), Include: []string{"embd", "output", "ffn_"}, Exclude: []string{"gate"}})
	for _, line := range []string{
		"token_embd.weight: convert", "output.weight: convert", "blk.0.ffn_up.weight: convert", "blk.0.ffn_down.weight: convert",
		"blk.0.attn_q.weight: not --include'd", "blk.0.ffn_gate.weight: --exclude'd",
	} {
		if !strings.Contains(got, line+"\n") && !strings.HasSuffix(got, line) {
			t.Errorf("ptqtp plan lacks %q:\n%s", line, got)
		}
	}
	got = reasons(ExportOptions{PTQTP: ptqtpOpt(2, 256)})
	if !strings.Contains(got, "not.x.weight: plane names would pass GGUF's 63 bytes") || !strings.Contains(got, "blk.0.ffn_up.weight: convert") {
		t.Errorf("ptqtp plan:\n%s", got)
	}
	for _, opt := range []ExportOptions{{Target: gguf.Q4_0}, {PTQTP: ptqtpOpt(4, 256)}, {PTQTP: ptqtpOpt(2, 256), DownPlanes: 5}} {
		if _, err := PlanExport(f, opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
}

// TestExportStopsWhenCancelled: a done context stops the export with its error.
func TestExportStopsWhenCancelled(t *testing.T) {
	f, err := gguf.Parse(tinyModel(t, gguf.F16, 1))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := PlanExport(f, ExportOptions{PTQTP: ptqtpOpt(2, 256)})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = Export(ctx, f, plan, &bytes.Buffer{}, ExportHooks{Tensor: func(TensorDone) {
		if n++; n == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Fatalf("after %d tensors: %v", n, err)
	}
}

// TestLoadPlanesRefusesBadPlaneSets: the version gate and the plane-set rules of LoadPlanes.
func TestLoadPlanesRefusesBadPlaneSets(t *testing.T) {
	file := func(kvs []gguf.KV, tensors ...gguf.TensorInfo) *gguf.File { return zeroFile(t, kvs, tensors) }
	v := func(val gguf.Value) []gguf.KV { return []gguf.KV{{Key: VersionKey, Value: val}} }
	p := func(n string, ty gguf.GGMLType, ne ...int64) gguf.TensorInfo {
		return gguf.TensorInfo{Name: n, Ne: ne, Type: ty}
	}
	for _, tc := range []struct {
		name string
		f    *gguf.File
		want error // nil: no planes, no error
	}{
		{"no key", file(nil, p("w.ptqtp0", gguf.TQ2_0, 256, 1)), nil},
		{"no planes", file(v(gguf.Uint32Value(1)), p("w", gguf.F32, 4)), nil},
		{"version 2", file(v(gguf.Uint32Value(2)), p("w.ptqtp0", gguf.TQ2_0, 256, 1)), ErrUnsupportedVersion},
		{"version u8", file(v(gguf.Uint8Value(1)), p("w.ptqtp0", gguf.TQ2_0, 256, 1)), ErrUnsupportedVersion},
		{"gap", file(v(gguf.Uint32Value(1)), p("w.ptqtp0", gguf.TQ2_0, 256, 1), p("w.ptqtp2", gguf.TQ2_0, 256, 1)), ErrInvalidPlaneSet},
		{"no plane 0", file(v(gguf.Uint32Value(1)), p("w.ptqtp1", gguf.TQ2_0, 256, 1)), ErrInvalidPlaneSet},
		{"f16 plane", file(v(gguf.Uint32Value(1)), p("w.ptqtp0", gguf.F16, 256, 1)), ErrPlaneType},
		{"mixed", file(v(gguf.Uint32Value(1)), p("w.ptqtp0", gguf.TQ2_0, 256, 1), p("w.ptqtp1", gguf.Q2_0, 256, 1)), ErrPlaneType},
		{"shapes", file(v(gguf.Uint32Value(1)), p("w.ptqtp0", gguf.TQ2_0, 256, 1), p("w.ptqtp1", gguf.TQ2_0, 256, 2)), ErrPlaneShape},
	} {
		l, err := LoadPlanes(tc.f, "w")
		if tc.want == nil && (l != nil || err != nil) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, l, err, tc.want)
		}
	}
	if base, p, ok := ParsePlaneName("blk.0.attn_q.weight.ptqtp2"); !ok || base != "blk.0.attn_q.weight" || p != 2 {
		t.Error("ParsePlaneName")
	}
	for _, n := range []string{".ptqtp0", "w.ptqtp3", "w.ptqtp", "w.weight"} {
		if _, _, ok := ParsePlaneName(n); ok {
			t.Errorf("%q parsed as a plane", n)
		}
	}
}
