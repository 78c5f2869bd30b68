package guard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// ptqtpFile writes a small GGUF file: a llama-ish header with the given extra keys and tensors (zero data).
func ptqtpFile(t *testing.T, kvs []gguf.KV, tensors []gguf.TensorInfo) []byte {
	t.Helper()
	all := append([]gguf.KV{{Key: "general.architecture", Value: gguf.StringValue("qwen3")}}, kvs...)
	var b bytes.Buffer
	w, err := gguf.NewWriter(&b, all, tensors)
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
	return b.Bytes()
}

func plane(name string, typ gguf.GGMLType, ne ...int64) gguf.TensorInfo {
	return gguf.TensorInfo{Name: name, Ne: ne, Type: typ}
}

// TestPTQTPFilesAreBankmlOnly: a file with PTQTP plane tensors is refused on mainline and prism as bankml/Fucina-only
// (bankml-only with Q2_0 planes) and plays on the bankml engine when its planes are what ternary.LoadPlanes loads;
// on bankml every malformed plane set is refused with its reason.
func TestPTQTPFilesAreBankmlOnly(t *testing.T) {
	v1 := gguf.KV{Key: "fucina.ptqtp.version", Value: gguf.Uint32Value(1)}
	good := []gguf.TensorInfo{
		plane("token_embd.weight", gguf.F16, 256, 8),
		plane("blk.0.attn_q.weight.ptqtp0", gguf.TQ2_0, 256, 4),
		plane("blk.0.attn_q.weight.ptqtp1", gguf.TQ2_0, 256, 4),
		plane("blk.0.ffn_down.weight.ptqtp0", gguf.TQ2_0, 512, 2),
		plane("blk.0.ffn_down.weight.ptqtp1", gguf.TQ2_0, 512, 2),
		plane("blk.0.ffn_down.weight.ptqtp2", gguf.TQ2_0, 512, 2),
		plane("output_norm.weight", gguf.F32, 256),
	}
	q2 := []gguf.TensorInfo{plane("blk.0.attn_q.weight.ptqtp0", gguf.Q2_0, 64, 4), plane("blk.0.attn_q.weight.ptqtp1", gguf.Q2_0, 64, 4)}
	for _, tc := range []struct {
		name    string
		kvs     []gguf.KV
		tensors []gguf.TensorInfo
		engine  Engine
		verdict Verdict
		want    string // in the reasons
	}{
		{"TQ2_0 planes on mainline", []gguf.KV{v1}, good, Mainline, Refuse, "bankml/Fucina-only; mainline llama.cpp cannot run it"},
		{"TQ2_0 planes on prism", []gguf.KV{v1}, good, Prism, Refuse, "2 matrices stored as 5 plane tensors (TQ2_0, e.g. \"blk.0.attn_q.weight.ptqtp0\")"},
		{"TQ2_0 planes on bankml", []gguf.KV{v1}, good, Bankml, Play, ""},
		{"Q2_0 planes on mainline", []gguf.KV{v1}, q2, Mainline, Refuse, "bankml-only (Q2_0 planes of 64-weight groups"},
		{"Q2_0 planes on bankml", []gguf.KV{v1}, q2, Bankml, Play, ""},
		{"planes without the key, mainline", nil, good, Mainline, Refuse, "no fucina.ptqtp.version: bankml/Fucina-only"},
		{"planes without the key, bankml", nil, good, Bankml, Refuse, "without fucina.ptqtp.version"},
		{"version 2", []gguf.KV{{Key: "fucina.ptqtp.version", Value: gguf.Uint32Value(2)}}, good, Bankml, Refuse, "fucina.ptqtp.version is u32 2; bankml reads version 1"},
		{"version as a string", []gguf.KV{{Key: "fucina.ptqtp.version", Value: gguf.StringValue("1")}}, good, Bankml, Refuse, "fucina.ptqtp.version is str"},
		{"plane 1 without plane 0", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp1", gguf.TQ2_0, 256, 1)}, Bankml, Refuse, "\"a.weight.ptqtp1\" lacks the planes before it"},
		{"plane 2 without plane 1", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp0", gguf.TQ2_0, 256, 1), plane("a.weight.ptqtp2", gguf.TQ2_0, 256, 1)}, Bankml, Refuse, "\"a.weight.ptqtp2\" lacks the planes before it"},
		{"F16 plane", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp0", gguf.F16, 256, 1)}, Bankml, Refuse, "plane \"a.weight.ptqtp0\" is F16, want TQ2_0 or Q2_0"},
		{"mixed plane types", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp0", gguf.TQ2_0, 256, 1), plane("a.weight.ptqtp1", gguf.Q2_0, 256, 1)}, Bankml, Refuse, "plane \"a.weight.ptqtp1\" is Q2_0, plane 0 is TQ2_0"},
		{"shapes differ", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp0", gguf.TQ2_0, 256, 1), plane("a.weight.ptqtp1", gguf.TQ2_0, 256, 2)}, Bankml, Refuse, "want 2-D and the shape of plane 0 [256 1]"},
		{"3-D plane", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight.ptqtp0", gguf.TQ2_0, 256, 1, 2)}, Bankml, Refuse, "want 2-D"},
		{"the key alone", []gguf.KV{v1}, []gguf.TensorInfo{plane("a.weight", gguf.F32, 4, 4)}, Mainline, Play, ""},
		{"a name like a plane's on another engine", nil, []gguf.TensorInfo{plane("a.ptqtp3", gguf.F32, 4)}, Mainline, Play, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := check(t, ptqtpFile(t, tc.kvs, tc.tensors), Options{Engine: tc.engine})
			if rep.Verdict != tc.verdict || !strings.Contains(rep.Reason, tc.want) {
				t.Fatalf("verdict %s, reason %q; want %s and %q", rep.Verdict, rep.Reason, tc.verdict, tc.want)
			}
		})
	}
	rep := check(t, ptqtpFile(t, []gguf.KV{v1}, good), Options{Engine: Bankml})
	if p := rep.PTQTP; p == nil || p.Version == nil || *p.Version != 1 || p.Matrices != 2 || p.PlaneTensors != 5 ||
		len(p.PlaneTypes) != 1 || p.PlaneTypes[0] != "TQ2_0" || p.Example != "blk.0.attn_q.weight.ptqtp0" {
		t.Errorf("report %+v", rep.PTQTP)
	}
	if rep := check(t, ptqtpFile(t, nil, []gguf.TensorInfo{plane("a.weight", gguf.F32, 4)}), Options{}); rep.PTQTP != nil {
		t.Errorf("a plain file has a PTQTP report: %+v", rep.PTQTP)
	}
}
