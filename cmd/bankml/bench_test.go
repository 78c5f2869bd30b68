//go:build !nobench

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// TestBenchKernelsPrintsTheTable: bankml bench kernels (two small shapes,
// few rounds) prints a markdown row per format and shape, every checked row
// equal to the reference's at every level, and the bandwidth table.
func TestBenchKernelsPrintsTheTable(t *testing.T) {
	if _, err := reference.LoadKernels(); err != nil {
		testdata.Absent(t, "reference not installed: %v", err)
	}
	code, out, stderr := runCLI("bench", "kernels", "--rounds", "2", "--ref-rows", "16", "--shapes", "kv,down", "--bw-mib", "64")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, typ := range []string{"q1_0", "q2_0", "tq2_0"} {
		for _, shape := range []string{"kv", "down"} {
			found := false
			for line := range strings.Lines(out) {
				f := strings.Split(line, "|")
				if len(f) > 3 && strings.TrimSpace(f[1]) == typ && strings.TrimSpace(f[2]) == shape {
					found = true
					if eq := strings.TrimSpace(f[len(f)-2]); eq != "16/16" {
						t.Errorf("%s %s: rows equal %s, want 16/16", typ, shape, eq)
					}
				}
			}
			if !found {
				t.Errorf("no row for %s %s in\n%s", typ, shape, out)
			}
		}
	}
	for _, want := range []string{"not subtracted", "| 1 |", "| 2 |", "GB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchKernelsRefusesBadFlags: --rounds and --ref-rows below 1, a negative
// --bw-mib, unknown shapes and types are usage errors naming the flag.
func TestBenchKernelsRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds: value 0 out of range [1, inf)"},
		{[]string{"--ref-rows", "0"}, "--ref-rows: value 0 out of range [1, inf)"},
		{[]string{"--bw-mib", "-5"}, "--bw-mib: value -5 out of range [0, inf) (0: skip"},
		{[]string{"--shapes", "qkv"}, "unknown \"qkv\""},
		{[]string{"--types", "q4_0"}, "unknown \"q4_0\""},
	} {
		code, _, stderr := runCLI(append([]string{"bench", "kernels"}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}

// TestBenchKernelsRefusesAMissingLevel: BANKML_CPU naming an unknown level
// is refused with the variable named, not ignored.
func TestBenchKernelsRefusesAMissingLevel(t *testing.T) {
	t.Setenv("BANKML_CPU", "avx1024")
	code, _, stderr := runCLI("bench", "kernels", "--rounds", "1")
	if code != 1 || !strings.Contains(stderr, "BANKML_CPU") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestBenchModelPrintsTheTable: bankml bench model on small stand-ins for
// the 8B files (tiny qwen3 files named b8-Q1_0.gguf and b8-TQ2_0.gguf in
// --dir; the command takes whatever it finds there) prints a row per type
// and thread count with both runtimes' rates, wall-clock and CPU ratios, the
// floor and the dispatch share, and bankml's greedy tokens equal to the
// reference's.
func TestBenchModelPrintsTheTable(t *testing.T) {
	if _, err := reference.Load(); err != nil {
		testdata.Absent(t, "reference not installed: %v", err)
	}
	dir := t.TempDir()
	for _, typ := range []string{"Q1_0", "TQ2_0"} {
		if code, _, stderr := runCLI("synth", dir+"/b8-"+typ+".gguf", "--arch", "qwen3", "--preset", "tiny", "--type", typ, "--seed", "5"); code != 0 {
			t.Fatalf("synth %s: exit %d, %s", typ, code, stderr)
		}
	}
	code, out, stderr := runCLI("bench", "model", "--dir", dir, "--types", "q1_0,tq2_0", "--threads", "1,2", "--rounds", "2",
		"--prompt", "12", "--gen", "6", "--bw-mib", "16")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out)
	}
	rows := map[string]int{} // each row is printed as it finishes and again in the table
	for line := range strings.Lines(out) {
		f := strings.Split(line, "|")
		if len(f) != 16 || (strings.TrimSpace(f[1]) != "q1_0" && strings.TrimSpace(f[1]) != "tq2_0") {
			continue
		}
		rows[f[1]+f[2]]++
		if eq := strings.TrimSpace(f[14]); eq != "6/6" {
			t.Errorf("%s: tokens equal %s, want 6/6", line, eq)
		}
		for _, col := range []int{3, 4, 7, 8} {
			if strings.Count(f[col], "/") != 2 {
				t.Errorf("%s: column %d is not min / median / max", line, col)
			}
		}
		for _, col := range []int{5, 6, 9, 10} {
			if !strings.HasSuffix(strings.TrimSpace(f[col]), "×") {
				t.Errorf("%s: column %d is not a ratio", line, col)
			}
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d distinct table rows, want 4:\n%s", len(rows), out)
	}
	for k, n := range rows {
		if n != 2 {
			t.Errorf("row %q printed %d times, want 2 (as it finished, then in the table)", k, n)
		}
	}
	for _, want := range []string{"GB/s", "dispatch", "packed copies"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchModelRefusesBadFlags: counts out of range, unknown types and bad
// thread lists are usage errors naming the flag.
func TestBenchModelRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds: value 0 out of range [1, inf)"},
		{[]string{"--prompt", "513"}, "--prompt: value 513 out of range [1, 512]"},
		{[]string{"--gen", "1"}, "--gen: value 1 out of range [2, inf)"},
		{[]string{"--types", "q4_0"}, "unknown \"q4_0\""},
		{[]string{"--threads", "1,x"}, "--threads"},
	} {
		code, _, stderr := runCLI(append([]string{"bench", "model"}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}

// TestBenchServeRefusesAFileThatIsNoGGUFWithExit2: a damaged model file in --dir is a file that cannot be
// used, exit 2 as for every other command (docs/cli.md, "Exit status"), naming the file and the fault.
func TestBenchServeRefusesAFileThatIsNoGGUFWithExit2(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b8-Q1_0.gguf")
	if err := os.WriteFile(path, []byte("this is no GGUF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("bench", "serve", "--dir", dir, "--types", "q1_0", "--no-ref")
	if code != 2 || !strings.Contains(stderr, "bench serve: "+path+": open: ") || !strings.Contains(stderr, "bad magic") {
		t.Errorf("exit %d, stderr %q; want 2 naming %s and its bad magic", code, stderr, path)
	}
}

// TestBenchHelpNamesAllFlags checks that `bankml bench --help` names every flag kong lists under
// `bankml bench all --help` (the --kernels- and --model- flags bench alone takes), and where each
// subcommand's are described.
func TestBenchHelpNamesAllFlags(t *testing.T) {
	_, all, _ := runCLI("bench", "all", "--help")
	flags := regexp.MustCompile(`--(kernels|model)-[a-z0-9-]+`).FindAllString(all, -1)
	if len(flags) < 10 {
		t.Fatalf("bench all --help lists %d prefixed flags: %q", len(flags), all)
	}
	code, bench, _ := runCLI("bench", "--help")
	bench = strings.Join(strings.Fields(bench), " ") // kong wraps the text
	for _, want := range append(flags, "bankml bench all --help", "bankml bench kernels --help", "bankml bench model --help") {
		if code != 0 || !strings.Contains(bench, want) {
			t.Errorf("bench --help (exit %d) lacks %q:\n%s", code, want, bench)
		}
	}
}
