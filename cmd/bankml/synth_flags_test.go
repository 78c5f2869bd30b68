package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthsFlagErrorsStartWithTheCommandAndExitAsTheFaultIs: synth's --type and --vocab errors start
// "bankml: synth: FLAG: " (the command first, once), and a --vocab file that is no GGUF is 2 as on every command
// that reads one, where a missing file or a folder is 1.
func TestSynthsFlagErrorsStartWithTheCommandAndExitAsTheFaultIs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.gguf")
	text := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(text, []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := filepath.Join(dir, "zeros.gguf")
	if err := os.WriteFile(zeros, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.gguf")
	base := []string{"synth", out, "--arch", "llama", "--preset", "tiny"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the start of standard error
	}{
		{name: "a --vocab file too short to be GGUF is 2 with the command first",
			args: []string{"--type", "TQ2_0", "--vocab", text}, code: 2, want: "bankml: synth: --vocab: " + text + ": gguf: truncated"},
		{name: "a --vocab file with the wrong magic is 2 with the command first",
			args: []string{"--type", "TQ2_0", "--vocab", zeros}, code: 2, want: "bankml: synth: --vocab: " + zeros + ": gguf: bad magic"},
		{name: "a missing --vocab file is 1, as a missing file on every command",
			args: []string{"--type", "TQ2_0", "--vocab", missing}, code: 1, want: "bankml: synth: --vocab: open " + missing + ": no such file"},
		{name: "a folder given as --vocab is 1, a usage error",
			args: []string{"--type", "TQ2_0", "--vocab", dir}, code: 1, want: "bankml: synth: --vocab: " + dir + " is a directory, not a GGUF file"},
		{name: "a --type synth does not take is 1 with the command first and no library wording",
			args: []string{"--type", "Q9"}, code: 1, want: `bankml: synth: --type: unsupported weight type "Q9" (have `},
		{name: "a --type-output synth does not take is named as --type-output",
			args: []string{"--type", "TQ2_0", "--type-output", "q9"}, code: 1, want: `bankml: synth: --type-output: unsupported weight type "q9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(base, tc.args...)...)
			if code != tc.code || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "synth: ") != 1 {
				t.Errorf("exit %d, stderr %q; want %d and a line starting %q, synth named once", code, stderr, tc.code, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
			}
		})
	}
}
