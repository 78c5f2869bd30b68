package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/ternary"
)

// ptqtpSource is a model converted to PTQTP planes in these tests:
// stories260K (rows of 64: 64-groups, Q2_0 planes; ffn_down's rows of 172
// stay F32) and a tiny synthetic qwen3 F16 model (rows of 256 and 512:
// 256-groups, TQ2_0 planes, Fucina's format).
type ptqtpSource struct {
	name   string
	path   func(t *testing.T, dir string) string
	group  int
	prompt []int32
}

var ptqtpSources = []ptqtpSource{
	{"stories260K", func(t *testing.T, _ string) string { return filepath.Join(modelsDir(t), "stories260K.gguf") }, 64,
		[]int32{1, 403, 407, 261, 378, 275, 263, 281, 344, 370, 291, 342, 297, 260}},
	{"qwen3-tiny-F16", func(t *testing.T, dir string) string {
		shape, err := synth.Preset("tiny")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "qwen3-tiny-F16.gguf")
		cfg := synth.Config{Arch: synth.ArchQwen3, Shape: shape, Weight: gguf.F16, Embd: gguf.F16, Output: gguf.F16, Seed: 11}
		if _, err := synth.WriteFile(p, cfg); err != nil {
			t.Fatal(err)
		}
		return p
	}, 256, []int32{1, 42, 300, 7, 999, 13, 512, 64, 2, 800, 77}},
}

// writePTQTP converts src to PTQTP with k planes per matrix (ternary.Export) into dir.
func writePTQTP(t *testing.T, src, dir string, k, group int) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := ternary.DefaultOptions()
	o.Planes, o.GroupSize = k, group
	plan, err := ternary.PlanExport(f, ternary.ExportOptions{PTQTP: &o})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ternary.Export(context.Background(), f, plan, &b, ternary.ExportHooks{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-ptqtp%d.gguf", filepath.Base(src), k))
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPTQTPOnePlaneMatchesTheReference: a K=1 PTQTP file, loaded through the
// plane loader (every projection a one-plane Linear from "<name>.ptqtp0"),
// gives the logits of every prompt position and the greedy tokens that the
// reference computes on the equivalent ordinary file (ternary.Unplane: the
// same plane bytes stored under the base names), bit for bit.
func TestPTQTPOnePlaneMatchesTheReference(t *testing.T) {
	lib := refLib(t)
	for _, src := range ptqtpSources {
		t.Run(src.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writePTQTP(t, src.path(t, dir), dir, 1, src.group)
			m := loadModel(t, path)
			planes := 0
			for _, l := range m.Linears() {
				if _, _, ok := ternary.ParsePlaneName(l.Name()); ok {
					planes++
				}
			}
			if planes == 0 {
				t.Fatal("no matrix was loaded from planes")
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			err = ternary.Unplane(f, &b)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			eq := filepath.Join(dir, "equivalent.gguf")
			if err := os.WriteFile(eq, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			rm, err := lib.LoadModel(eq)
			if err != nil {
				t.Fatal(err)
			}
			defer rm.Close()
			const nGen = 16
			s, err := rm.NewSession(len(src.prompt)+nGen, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want, err := s.DecodeAll(src.prompt)
			if err != nil {
				t.Fatal(err)
			}
			c := newCtx(t, m, len(src.prompt)+nGen, 2)
			got, err := c.DecodeAll(src.prompt)
			if err != nil {
				t.Fatal(err)
			}
			nv := m.HP.NVocab
			bad := 0
			for r := range len(src.prompt) {
				for j := range nv {
					if math.Float32bits(got[r*nv+j]) != math.Float32bits(want[r*nv+j]) {
						bad++
						break
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d logits rows differ from the reference's", bad, len(src.prompt))
			}
			wantToks, err := s.Generate(want[(len(src.prompt)-1)*nv:], nGen, false)
			if err != nil {
				t.Fatal(err)
			}
			gotToks := greedy(t, m, src.prompt, nGen)
			if fmt.Sprint(gotToks) != fmt.Sprint(wantToks) {
				t.Errorf("greedy %v, reference %v", gotToks, wantToks)
			}
			if !t.Failed() {
				t.Logf("%d matrices from planes; %d of %d logits rows and %d of %d greedy tokens equal to the reference's", planes,
					len(src.prompt), len(src.prompt), nGen, nGen)
			}
		})
	}
}

// TestPTQTPPlaneSumsMatchTheReference: for K = 2 and 3, every layer loaded
// from planes computes, through quant.Work.MatMulPlanes at the model's level
// (what the graph calls), the sum in plane order, in float32, of the
// reference's ggml_mul_mat of each plane (its TQ2_0 or Q2_0 dot products after
// its own activation quantization), bit for bit, for 1 and 5 columns; and so
// does quant.Work.MatMulShared, the graph's path for Q/K/V and gate/up.
func TestPTQTPPlaneSumsMatchTheReference(t *testing.T) {
	refLib(t) // skips (fails under CI) without the reference
	kern, err := reference.LoadKernels()
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range ptqtpSources {
		for _, k := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s-K%d", src.name, k), func(t *testing.T) {
				dir := t.TempDir()
				path := writePTQTP(t, src.path(t, dir), dir, k, src.group)
				m := loadModel(t, path)
				w, err := quant.NewWork(m.Level, nil)
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(uint64(k), 7))
				layers, checked := 0, 0
				for _, l := range m.Linears() {
					if len(l.Planes) == 1 {
						continue
					}
					if len(l.Planes) != k {
						t.Fatalf("%s: %d planes, want %d", l.Name(), len(l.Planes), k)
					}
					layers++
					for _, n := range []int{1, 5} {
						x := make([]float32, n*l.Cols())
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
						got := make([]float32, n*l.Rows())
						w.MatMulPlanes(l.Planes, x, n, got)
						shared := make([]float32, n*l.Rows()) // the Q/K/V and gate/up path
						w.MatMulShared(x, n, l.product(shared))
						want := make([]float32, n*l.Rows())
						part := make([]float32, n*l.Rows())
						for _, p := range l.Planes {
							g, err := kern.NewMulMatGraph(int32(p.Type), p.Rows, p.Cols, n, len(p.Data))
							if err != nil {
								t.Fatal(err)
							}
							if err := g.SetWeights(p.Data); err != nil {
								t.Fatal(err)
							}
							if err := g.SetInput(x); err != nil {
								t.Fatal(err)
							}
							if err := g.Compute(1); err != nil {
								t.Fatal(err)
							}
							g.Output(part)
							g.Close()
							for i := range want {
								want[i] += part[i]
							}
						}
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(shared[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s (%d planes, %d columns): output %d = %g (shared %g), reference plane sum %g", l.Name(), k, n, i, got[i], shared[i], want[i])
							}
						}
						checked++
					}
				}
				if layers == 0 {
					t.Fatal("no layer has planes")
				}
				t.Logf("%d of %d products (%d layers of %d planes, 1 and 5 columns) equal the reference's plane sums", checked, 2*layers, layers, k)
			})
		}
	}
}

// TestPTQTPLoaderRefuses: the token embedding stored as planes (the lookup
// reads one tensor) is refused naming it, and a K=2 file has no single-plane
// equivalent (ternary.Unplane refuses it).
func TestPTQTPLoaderRefuses(t *testing.T) {
	dir := t.TempDir()
	src := ptqtpSources[1].path(t, dir)
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := ternary.DefaultOptions()
	plan, err := ternary.PlanExport(f, ternary.ExportOptions{PTQTP: &o, Include: []string{"token_embd", "attn_q"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ternary.Export(context.Background(), f, plan, &b, ternary.ExportHooks{}); err != nil {
		t.Fatal(err)
	}
	pf, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(pf); err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"token_embd.weight" is stored as 2 PTQTP planes`) {
		t.Errorf("Load of planes for token_embd: %v", err)
	}
	if err := ternary.Unplane(pf, io.Discard); err == nil || !strings.Contains(err.Error(), "has 2 planes") {
		t.Errorf("Unplane of a K=2 file: %v", err)
	}
}
