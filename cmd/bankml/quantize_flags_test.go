package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuantizeTypeAsLlamaQuantizeTakesIt: --type takes a name in any case and tq1_0's, tq2_0's and q2_0's
// llama_ftype numbers, as llama-quantize's try_parse_ftype does.
func TestQuantizeTypeAsLlamaQuantizeTakesIt(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	for _, tc := range []struct {
		name, ty, want string
	}{
		{"an upper-case name is taken as llama-quantize takes it", "TQ2_0", "-> tq2_0 (dry run: nothing written)"},
		{"a mixed-case name too", "Tq1_0", "-> tq1_0 (dry run: nothing written)"},
		{"llama-quantize's ftype number 37 is tq2_0", "37", "-> tq2_0 (dry run: nothing written)"},
		{"41 is q2_0", "41", "-> q2_0 (dry run: nothing written)"},
		{"bankml's own ptqtp in capitals", "PTQTP", "-> ptqtp K=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI("quantize", in, "--type", tc.ty, "--dry-run")
			if code != 0 || !strings.Contains(stdout, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestQuantizeRefusesLlamaQuantizesPositionalFormsAndEmptyPaths: llama-quantize's positional TYPE and
// NTHREADS (IN OUT TYPE [NTHREADS], IN TYPE [NTHREADS]) are refused with bankml's spelling; a type bankml does
// not write names the flag and the value; an empty OUT or IN is refused naming it, never taken as the current
// folder. Nothing is written.
func TestQuantizeRefusesLlamaQuantizesPositionalFormsAndEmptyPaths(t *testing.T) {
	dir := t.TempDir()
	in := tinyF16(t, dir)
	out := filepath.Join(dir, "out.gguf")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"IN OUT TYPE is refused with bankml's spelling", []string{in, out, "TQ2_0"},
			"bankml: quantize: llama-quantize's positional form IN OUT TYPE [NTHREADS] is not taken: write bankml quantize IN.gguf OUT.gguf --type tq2_0 (see"},
		{"IN OUT TYPE NTHREADS gives -t in the hint", []string{in, out, "tq1_0", "4"},
			"write bankml quantize IN.gguf OUT.gguf --type tq1_0 -t 4 (see"},
		{"IN TYPE is refused with bankml's spelling", []string{in, "q2_0"},
			"llama-quantize's positional form IN TYPE [NTHREADS] (which writes ggml-model-TYPE.gguf beside IN) is not taken: write bankml quantize IN.gguf OUT.gguf --type q2_0"},
		{"an argument after OUT that is no type is refused naming it", []string{in, out, "extra", "--type", "tq2_0"},
			"bankml: quantize: unexpected argument extra: bankml quantize takes IN.gguf and OUT.gguf (llama-quantize's TYPE and NTHREADS are --type and -t here)"},
		{"a type bankml does not write is refused naming the flag and the value", []string{in, out, "--type", "Q4_K_M"},
			`bankml: quantize: --type "Q4_K_M": want tq2_0, tq1_0, q2_0 or ptqtp (in any case), or the llama-quantize ftype number of tq2_0, tq1_0 or q2_0: 37, 36 or 41`},
		{"another type's ftype number is refused alike", []string{in, out, "--type", "38"}, `--type "38": want tq2_0`},
		{"an empty OUT is refused naming it, not taken as the current folder", []string{in, "", "--type", "tq2_0"},
			"bankml: quantize: [<OUT.gguf>]: the file name is empty"},
		{"an empty IN is refused naming it", []string{"", out, "--type", "tq2_0"}, "bankml: quantize: <IN.gguf>: the file name is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"quantize"}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("%s was written", out)
			}
		})
	}
}
