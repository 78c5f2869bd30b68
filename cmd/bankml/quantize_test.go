package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// tinyF16 writes a tiny synthetic qwen3 F16 model (rows of 256 and 512) into dir with bankml synth.
func tinyF16(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tiny-F16.gguf")
	if code, _, stderr := runCLI("synth", p, "--arch", "qwen3", "--preset", "tiny", "--type", "f16", "--seed", "4"); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	return p
}

// TestQuantizeDryRunPrintsThePlan: --dry-run prints one line per tensor, the totals and the memory estimate, and
// writes nothing.
func TestQuantizeDryRunPrintsThePlan(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	code, stdout, stderr := runCLI("quantize", in, filepath.Join(dir, "out.gguf"), "--type", "ptqtp", "--planes", "2", "--down-planes", "3", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"-> ptqtp K=2, ffn_down K=3, groups of 256 (tq2_0 planes) (dry run: nothing written)",
		"  keep     token_embd.weight        [256, 1024]     f16               512.0 KiB (token embedding (kept unless --include selects it))",
		"  keep     blk.0.attn_norm.weight   [256]           f32               1.0 KiB (a norm)",
		"  convert  blk.0.attn_q.weight      [256, 256]      f16 -> tq2_0 x2   128.0 KiB -> 33.0 KiB",
		"  convert  blk.1.ffn_down.weight    [512, 256]      f16 -> tq2_0 x3   256.0 KiB -> 99.0 KiB",
		"tensors: 25: 14 converted (30 plane tensors), 11 kept",
		"peak memory estimate: ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, stdout)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("dry run wrote %v", left)
	}
}

// TestQuantizeWritesTheModel: each target writes a file that parses, with a diagnostic line per converted tensor
// and a summary; an existing OUT is kept unless --force, and --force writes the same bytes again.
func TestQuantizeWritesTheModel(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	for _, tc := range []struct {
		args  []string
		line  string
		types map[string]gguf.GGMLType
	}{
		{[]string{"--type", "tq2_0"}, "[3/25] blk.0.attn_q.weight [256, 256] f16 -> tq2_0  rel_err 0.",
			map[string]gguf.GGMLType{"blk.0.attn_q.weight": gguf.TQ2_0, "token_embd.weight": gguf.F16}},
		{[]string{"--type", "q2_0", "-t", "1"}, "blk.1.ffn_down.weight [512, 256] f16 -> q2_0  rel_err",
			map[string]gguf.GGMLType{"blk.1.ffn_down.weight": gguf.Q2_0}},
		{[]string{"--type", "tq1_0", "--include", "embd,ffn_up"}, "token_embd.weight [256, 1024] f16 -> tq1_0",
			map[string]gguf.GGMLType{"token_embd.weight": gguf.TQ1_0, "blk.0.ffn_up.weight": gguf.TQ1_0, "blk.0.attn_q.weight": gguf.F16}},
		{[]string{"--type", "ptqtp", "--planes", "1", "--o-planes", "3", "--exclude", "attn_k"}, "blk.0.attn_output.weight [256, 256] f16 -> tq2_0 x3  rel_err 0.",
			map[string]gguf.GGMLType{"blk.0.attn_q.weight.ptqtp0": gguf.TQ2_0, "blk.0.attn_output.weight.ptqtp2": gguf.TQ2_0, "blk.0.attn_k.weight": gguf.F16}},
		{[]string{"--type", "ptqtp", "--group-size", "64"}, "zeros 0.",
			map[string]gguf.GGMLType{"blk.1.ffn_gate.weight.ptqtp1": gguf.Q2_0}},
	} {
		out := filepath.Join(dir, strings.Join(tc.args, "")+".gguf")
		args := append([]string{"quantize", in, out}, tc.args...)
		code, stdout, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stdout, tc.line) || !strings.Contains(stdout, "wrote "+out+": ") || !strings.Contains(stdout, "peak RSS") {
			t.Fatalf("%v: exit %d\n%s%s", tc.args, code, stdout, stderr)
		}
		first, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(first)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tc.types {
			if ti, ok := f.Tensor(name); !ok || ti.Type != want {
				t.Errorf("%v: %s is %v, want %s", tc.args, name, ti, want)
			}
		}
		if code, _, stderr := runCLI(args...); code != 1 || !strings.Contains(stderr, "--force") {
			t.Fatalf("%v again without --force: exit %d, %s", tc.args, code, stderr)
		}
		if code, _, stderr := runCLI(append(args, "--force", "-t", "3")...); code != 0 {
			t.Fatalf("%v --force: %s", tc.args, stderr)
		}
		if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
			t.Fatalf("%v: a second run wrote different bytes", tc.args)
		}
	}
}

// TestQuantizeRefusesBadInvocations: bad flags, outputs and inputs are errors naming the problem (exit 1; 2 for a
// malformed input file), and nothing is written.
func TestQuantizeRefusesBadInvocations(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	out := filepath.Join(dir, "out.gguf")
	junk := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(junk, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{in, out, "--type", "tq2_0", "--planes", "2"}, 1, "go with --type ptqtp"},
		{[]string{in, out, "--type", "ptqtp", "--planes", "4"}, 1, "--planes: value 4 out of range [1, 3]"},
		{[]string{in, out, "--type", "ptqtp", "--group-size", "128"}, 1, "group size 128"},
		{[]string{in, out, "--type", "ptqtp", "--down-planes", "5"}, 1, "--down-planes: value 5 out of range [1, 3]"},
		{[]string{in, out, "--type", "q4_0"}, 1, "--type"},
		{[]string{in, "--type", "tq2_0"}, 1, "OUT.gguf is required"},
		{[]string{in, in, "--type", "tq2_0", "--force"}, 1, "is the input file"},
		{[]string{in, dir, "--type", "tq2_0", "--force"}, 1, "not a regular file"},
		{[]string{filepath.Join(dir, "absent.gguf"), out, "--type", "tq2_0"}, 1, "no such file"},
		{[]string{junk, out, "--type", "tq2_0"}, 2, "truncated"},
	} {
		code, _, stderr := runCLI(append([]string{"quantize"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 2 {
		t.Errorf("left behind: %v", left)
	}
}

// TestQuantizedModelsRunInTheReference: `bankml quantize --type tq2_0` (and tq1_0, q2_0) of an F16 model writes a
// file the reference loads and decodes to finite, not all equal logits; the PTQTP file it cannot load (its
// layers' tensors are planes), as the guard says.
func TestQuantizedModelsRunInTheReference(t *testing.T) {
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	dir := t.TempDir()
	in := tinyF16(t, dir)
	for _, ty := range []string{"tq2_0", "tq1_0", "q2_0", "ptqtp"} {
		out := filepath.Join(dir, ty+".gguf")
		if code, _, stderr := runCLI("quantize", in, out, "--type", ty); code != 0 {
			t.Fatalf("%s: %s", ty, stderr)
		}
		m, err := lib.LoadModel(out)
		if ty == "ptqtp" {
			if err == nil {
				m.Close()
				t.Fatal("the reference loaded a PTQTP file")
			}
			t.Logf("ptqtp: the reference refuses it: %v", err)
			if code, stdout, _ := runCLI("guard", out); code != 2 || !strings.Contains(stdout, "mainline llama.cpp cannot run it") {
				t.Errorf("guard: exit %d, %s", code, stdout)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		logits, err := m.PromptLogits([]int32{1, 42, 300, 7}, 1)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, x := range logits {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s: logit %g", ty, x)
			}
			lo, hi = min(lo, x), max(hi, x)
		}
		if len(logits) != 1024 || !(hi > lo) {
			t.Fatalf("%s: %d logits in [%g, %g]", ty, len(logits), lo, hi)
		}
		t.Logf("%s: the reference loads it; %d finite logits in [%.3f, %.3f]", ty, len(logits), lo, hi)
	}
}

// TestQuantizeSaysWhatItDidAndWhatItCouldNot: converting nothing is an error naming why (exit 1, nothing written);
// --include/--exclude globs print how many tensors each matched and a malformed glob is refused; a low-bit source
// re-quantized to a format of more bits per weight warns; a tensor past --warn-rel-err is flagged on its line and
// counted in a warning.
func TestQuantizeSaysWhatItDidAndWhatItCouldNot(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	q1 := filepath.Join(dir, "tiny-Q1_0.gguf")
	if code, _, stderr := runCLI("synth", q1, "--arch", "qwen3", "--preset", "tiny", "--type", "q1_0", "--seed", "4"); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	stories := testdata.Model(t, "stories260K.gguf")
	out := filepath.Join(dir, "out.gguf")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		wantOut    []string // in stdout
		wantErr    []string // in stderr
		notErr     string   // not in stderr
		writesFile bool
	}{
		{"a model with no row of whole 256-weight blocks converts nothing and says why", []string{stories, out, "--type", "tq2_0"}, 1, nil,
			[]string{"0 of 48 tensors eligible: 30 rows of 64 are not whole 256-weight blocks", "try --type q2_0 (blocks of 64)"}, "", false},
		{"a dry run that converts nothing prints its plan and fails", []string{stories, "--type", "ptqtp", "--dry-run"}, 1,
			[]string{"tensors: 48: 0 converted, 48 kept"}, []string{"0 of 48 tensors eligible", "try --group-size 64"}, "", false},
		{"an --include that selects nothing converts nothing", []string{in, out, "--type", "tq2_0", "--include", "nope"}, 1,
			[]string{`--include "nope": 0 tensors (matches nothing`}, []string{"16 not --include'd", "check the --include patterns"}, "", false},
		{"globs print their match counts", []string{in, out, "--type", "tq2_0", "--include", "blk.*.ffn_*", "--exclude", "blk.1.*"}, 0,
			[]string{`--include "blk.*.ffn_*": 8 tensors`, `--exclude "blk.1.*": 11 tensors`, "blk.0.ffn_up.weight", "3 tensors converted"}, nil, "", true},
		{"a plain pattern still matches as a substring", []string{in, out, "--type", "tq2_0", "--include", "ffn_down", "--force"}, 0,
			[]string{`--include "ffn_down": 2 tensors`, "2 tensors converted"}, nil, "", true},
		{"a malformed glob is refused by name", []string{in, out, "--type", "tq2_0", "--include", "blk.[", "--force"}, 1, nil,
			[]string{`include pattern "blk.["`}, "", false},
		{"a 1-bit source re-quantized to tq2_0 warns that it grows", []string{q1, out, "--type", "tq2_0", "--force"}, 0, nil,
			[]string{"are q1_0 at 1.125 bits per weight, re-quantized to tq2_0 at 2.062 bits per weight: the file grows"}, "", true},
		{"an F16 source to tq2_0 does not warn that it grows", []string{in, out, "--type", "tq2_0", "--force", "--warn-rel-err", "0"}, 0, nil, nil, "warning", true},
		{"absmax ternary past --warn-rel-err is flagged", []string{in, out, "--type", "tq2_0", "--force", "--warn-rel-err", "0.3"}, 0,
			[]string{"HIGH ERROR (rel_err above --warn-rel-err 0.3)"}, []string{"14 of 14 converted tensors have a relative error above 0.3"}, "", true},
		{"PTQTP K=3 stays under the default threshold", []string{in, out, "--type", "ptqtp", "--planes", "3", "--force"}, 0, nil, nil, "relative error above", true},
		{"a negative --warn-rel-err is refused", []string{in, out, "--type", "tq2_0", "--force", "--warn-rel-err", "-1"}, 1, nil,
			[]string{"--warn-rel-err: value -1 out of range [0, inf)"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, stdout, stderr := runCLI(append([]string{"quantize"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.notErr != "" && strings.Contains(stderr, tc.notErr) {
				t.Errorf("stderr has %q:\n%s", tc.notErr, stderr)
			}
			if _, err := os.Stat(out); (err == nil) != tc.writesFile {
				t.Errorf("OUT written: %v; want %v", err == nil, tc.writesFile)
			}
		})
	}
}

// TestQuantizeNamesWhyItCannotWriteOUT: an OUT that is a folder (or another file that is not a regular one) is
// refused saying what it is ("/tmp is not a regular file: it is a directory", not FileMode's "d---------"), and
// an OUT in a folder that does not exist, or under a file, is refused naming OUT and that folder, never the
// temporary file quantize writes through; nothing is written.
func TestQuantizeNamesWhyItCannotWriteOUT(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	missing := filepath.Join(dir, "missing", "q.gguf")
	under := filepath.Join(in, "q.gguf")
	for _, tc := range []struct {
		name string
		out  string
		want string
	}{
		{"a folder", dir, "quantize: " + dir + " is not a regular file: it is a directory (OUT.gguf names the file to write)"},
		{"a device", "/dev/null", "quantize: /dev/null is not a regular file: it is a character device"},
		{"in a missing folder", missing, "quantize: cannot write " + missing + ": the folder " + filepath.Dir(missing) + " does not exist"},
		{"under a file", under, "quantize: cannot write " + under + ": " + in + " is not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI("quantize", in, tc.out, "--type", "q2_0", "--force")
			if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, ".tmp") {
				t.Fatalf("exit %d, %q; want exit 1 and %q, no temporary file's name", code, stderr, tc.want)
			}
		})
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left behind: %v", left)
	}
}
