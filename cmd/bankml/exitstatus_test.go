package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/pull"
)

// TestEveryCommandGivesTheSameExitStatusForTheSameFault holds every command to the one rule (docs/cli.md,
// "Exit status"): 1 for a usage error (a bad flag value, a missing argument, a cache type bankml does not take)
// and for what names nothing (a missing file, a model name neither in the store nor in the catalog, as a
// missing file), 2 for a file or model that cannot be used (a damaged GGUF, a cache type the model's heads do
// not fit). Each message names the problem, and no command prints a Go panic.
func TestEveryCommandGivesTheSameExitStatusForTheSameFault(t *testing.T) {
	model := storiesPath(t) // head size 8: no quantized cache type fits it
	dir := t.TempDir()
	t.Setenv("BANKML_MODELS", filepath.Join(dir, "store"))
	t.Setenv(pull.EnvMirror, "")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	garbage := write("garbage.gguf", "this is no GGUF file\n")
	truncated := write("truncated.gguf", string(src[:200]))
	missing := filepath.Join(dir, "missing.gguf")
	cut := write("cut.gguf", string(src[:len(src)-len(src)/4])) // the header whole, the last tensors' data gone
	// A store whose manifests/x is a file: writing model x's manifest fails (I/O), even as root.
	badStore := filepath.Join(dir, "badstore")
	if err := os.MkdirAll(filepath.Join(badStore, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("badstore", "manifests", "x"), "")
	text := write("text.txt", "Once upon a time there was a story.\n")
	conv := `[{"role":"user","content":"hi"}]`
	const unknown = "nosuchmodel"
	notInCatalog := unknown + " is not a file, not in the store"
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		msg   string
	}{
		// A model name neither in the store nor in the catalog names nothing, as a missing file: 1.
		{"run of an unknown model name is 1", []string{"run", unknown, "-p", "hi"}, "", 1, "run: " + notInCatalog},
		{"serve of an unknown model name is 1", []string{"serve", unknown, "--port", "0"}, "", 1, "serve: " + notInCatalog},
		{"embed of an unknown model name is 1", []string{"embed", unknown, "-p", "hi"}, "", 1, "embed: " + notInCatalog},
		{"perplexity of an unknown model name is 1", []string{"perplexity", unknown, text}, "", 1, "perplexity: " + notInCatalog},
		{"pull of an unknown model name is 1", []string{"pull", unknown}, "", 1, unknown + ":latest is not in bankml's catalog"},
		{"show of an unknown model name is 1", []string{"show", unknown}, "", 1, "show: store: " + unknown + ":latest: not found"},
		{"rm of an unknown model name is 1", []string{"rm", unknown}, "", 1, "rm: store: " + unknown + ":latest: not found"},
		{"cp of an unknown model name is 1", []string{"cp", unknown, "other"}, "", 1, "cp: store: " + unknown + ":latest: not found"},
		{"create from an unknown model name is 1", []string{"create", "x", "-f", write("Modelfile.unknown", "FROM "+unknown+"\n")}, "", 1, "FROM " + unknown + ": not a file, not in the store"},
		// A missing file: 1.
		{"run of a missing file is 1", []string{"run", missing, "-p", "hi"}, "", 1, missing + ": no such file"},
		{"serve of a missing file is 1", []string{"serve", missing, "--unpinned", "--port", "0"}, "", 1, missing + ": no such file"},
		{"embed of a missing file is 1", []string{"embed", missing, "-p", "hi"}, "", 1, missing + ": no such file"},
		{"perplexity of a missing file is 1", []string{"perplexity", missing, text}, "", 1, missing + ": no such file"},
		{"tokenize of a missing file is 1", []string{"tokenize", missing, "-p", "hi"}, "", 1, missing + ": no such file"},
		{"chat-template of a missing file is 1", []string{"chat-template", missing}, conv, 1, missing + ": no such file"},
		{"inspect of a missing file is 1", []string{"inspect", missing}, "", 1, missing + ": no such file"},
		{"guard of a missing file is 1", []string{"guard", missing}, "", 1, missing + ": no such file"},
		{"quantize of a missing file is 1", []string{"quantize", missing, filepath.Join(dir, "q.gguf"), "--type", "tq2_0"}, "", 1, missing + ": no such file"},
		{"pull of a missing file is 1", []string{"pull", missing}, "", 1, missing + ": no such file, and not a model name"},
		{"create from a missing file is 1", []string{"create", "x", "-f", write("Modelfile.missing", "FROM "+missing+"\n")}, "", 1, "FROM " + missing + ": no such file, and not a model name"},
		// A file that is no GGUF, or a truncated one, cannot be used: 2.
		{"run of a file that is no GGUF is 2", []string{"run", garbage, "-p", "hi"}, "", 2, `bad magic "this"`},
		{"run of a truncated GGUF is 2", []string{"run", truncated, "-p", "hi"}, "", 2, "header truncated"},
		{"serve of a file that is no GGUF is 2", []string{"serve", garbage, "--unpinned", "--port", "0"}, "", 2, `bad magic "this"`},
		{"embed of a file that is no GGUF is 2", []string{"embed", garbage, "-p", "hi"}, "", 2, `bad magic "this"`},
		{"perplexity of a truncated GGUF is 2", []string{"perplexity", truncated, text}, "", 2, "header truncated"},
		{"tokenize of a file that is no GGUF is 2", []string{"tokenize", garbage, "-p", "hi"}, "", 2, "bad magic"},
		{"detokenize of a truncated GGUF is 2", []string{"detokenize", truncated, "1"}, "", 2, "truncated"},
		{"chat-template of a file that is no GGUF is 2", []string{"chat-template", garbage}, conv, 2, "bad magic"},
		{"inspect of a truncated GGUF is 2", []string{"inspect", truncated}, "", 2, "truncated"},
		{"quantize of a file that is no GGUF is 2", []string{"quantize", garbage, filepath.Join(dir, "q.gguf"), "--type", "tq2_0"}, "", 2, "bad magic"},
		{"pull of a file that is no GGUF is 2", []string{"pull", garbage}, "", 2, "garbage.gguf is not a GGUF file"},
		{"create from a file that is no GGUF is 2", []string{"create", "x", "-f", write("Modelfile.garbage", "FROM "+garbage+"\n")}, "", 2, "FROM " + garbage + ": garbage.gguf is not a GGUF file"},
		// A GGUF whose header parses but whose tensor data runs past the end (a cut download) is no whole GGUF:
		// pull and create refuse it before the store names it (2), as every command that reads it.
		{"pull of a GGUF cut inside its tensor data is 2", []string{"pull", cut}, "", 2, "cut.gguf is not a whole GGUF file (gguf: tensor"},
		{"pull of a GGUF cut inside its header is 2", []string{"pull", truncated}, "", 2, "truncated.gguf is not a whole GGUF file (gguf: truncated"},
		{"create from a GGUF cut inside its tensor data is 2", []string{"create", "x", "-f", write("Modelfile.cut", "FROM "+cut+"\n")}, "", 2, "cut.gguf is not a whole GGUF file"},
		{"run of a GGUF cut inside its tensor data is 2", []string{"run", cut, "-p", "hi"}, "", 2, "past the end"},
		// create: a Modelfile bankml refuses is the user's input, 1 as a bad flag value
		// (TestCreateExitsOneForAModelfileItRefuses); the store's I/O (reading the Modelfile, writing the
		// manifest) is 1, as on every command.
		{"create with a TEMPLATE is 1", []string{"create", "x", "-f", write("Modelfile.template", "FROM "+model+"\nTEMPLATE {{ .Prompt }}\n")}, "", 1, "TEMPLATE is refused"},
		{"create with a bad PARAMETER is 1", []string{"create", "x", "-f", write("Modelfile.param", "FROM "+model+"\nPARAMETER temperature hot\n")}, "", 1, "PARAMETER temperature hot"},
		{"create whose Modelfile cannot be read is 1", []string{"create", "x", "-f", dir}, "", 1, "is a directory"},
		{"create whose manifest cannot be written is 1", []string{"create", "x", "--models", badStore, "-f", write("Modelfile.ok", "FROM "+model+"\n")}, "", 1, "not a directory"},
		// A cache type bankml does not take is a bad flag value (1); one the model's heads do not fit cannot run (2).
		{"run with a cache type the heads do not fit is 2", []string{"run", model, "-ctk", "q8_0", "-p", "hi"}, "", 2, "K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"},
		{"serve with a cache type the heads do not fit is 2", []string{"serve", model, "--unpinned", "--port", "0", "-ctv", "q4_0"}, "", 2, "V cache type q4_0 with block size 32 does not divide n_embd_head_v=8"},
		{"run with a cache type bankml does not take is 1", []string{"run", model, "-ctk", "q4_1"}, "", 1, "cache type q4_1 is not supported by bankml"},
		{"serve with a cache type llama.cpp does not take is 1", []string{"serve", model, "--unpinned", "-ctv", "f8"}, "", 1, `unsupported cache type "f8"`},
		// Bad flag values and missing arguments are usage errors: 1.
		{"run with too many threads is 1", []string{"run", model, "-t", "1000"}, "", 1, "-t/--threads: value 1000 out of range [-2147483648, 512]"},
		{"serve with a port out of range is 1", []string{"serve", model, "--unpinned", "--port", "70000"}, "", 1, "--port: value 70000 out of range [0, 65535]"},
		{"embed with an unknown pooling is 1", []string{"embed", model, "--pooling", "bad", "-p", "hi"}, "", 1, "--pooling"},
		{"perplexity with a negative context is 1", []string{"perplexity", model, text, "-c", "-5"}, "", 1, "-c/--ctx-size: value -5 out of range [3, 1073741824]"},
		// A value out of range is worded alike on every command: "FLAG: value V out of range [LO, HI]".
		{"run with -c out of range is 1", []string{"run", model, "-c", "-5"}, "", 1, "run: -c/--ctx-size: value -5 out of range [0, 1073741824]"},
		{"serve with -c out of range is 1", []string{"serve", model, "--unpinned", "-c", "2000000000"}, "", 1, "serve: -c/--ctx-size: value 2000000000 out of range [0, 1073741824]"},
		{"embed with -c out of range is 1", []string{"embed", model, "-c", "-5", "-p", "hi"}, "", 1, "embed: -c/--ctx-size: value -5 out of range [0, 1073741824]"},
		{"run with -n out of range is 1", []string{"run", model, "-n", "-3"}, "", 1, "run: -n/--n-predict: value -3 out of range [-2, 2147483647]"},
		{"run with -n past a 32-bit int is 1", []string{"run", model, "-n", "3000000000"}, "", 1, "run: -n/--n-predict: value 3000000000 out of range [-2, 2147483647]"},
		{"serve with -t out of range is 1", []string{"serve", model, "--unpinned", "-t", "600"}, "", 1, "-t/--threads: value 600 out of range [-2147483648, 512]"},
		{"embed with -t out of range is 1", []string{"embed", model, "-t", "513", "-p", "hi"}, "", 1, "-t/--threads: value 513 out of range [-2147483648, 512]"},
		{"run with --seed out of range is 1", []string{"run", model, "--seed", "-5"}, "", 1, "run: -s/--seed: value -5 out of range [-1, 4294967294]"},
		{"run with --repeat-last-n out of range is 1", []string{"run", model, "--repeat-last-n", "-2"}, "", 1, "run: --repeat-last-n: value -2 out of range [0, 2147483647]"},
		{"serve with -np out of range is 1", []string{"serve", model, "--unpinned", "-np", "300"}, "", 1, "serve: -np/--parallel: value 300 out of range [1, 256]"},
		{"serve with --timeout out of range is 1", []string{"serve", model, "--unpinned", "-to", "0"}, "", 1, "serve: -to/--timeout: value 0 out of range [1, 2147483647]"},
		{"serve with --queue out of range is 1", []string{"serve", model, "--unpinned", "--queue", "0"}, "", 1, "serve: --queue: value 0 out of range [1, inf)"},
		{"serve with --cache-ram out of range is 1", []string{"serve", model, "--unpinned", "-cram", "-2"}, "", 1, "serve: -cram/--cache-ram: value -2 out of range [-1, inf)"},
		{"perplexity with --chunks out of range is 1", []string{"perplexity", model, text, "--chunks", "0"}, "", 1, "perplexity: --chunks: value 0 out of range [1, inf)"},
		{"perplexity with -b out of range is 1", []string{"perplexity", model, text, "-b", "0"}, "", 1, "perplexity: -b/--batch-size: value 0 out of range [1, 2147483647]"},
		{"quantize with --warn-rel-err out of range is 1", []string{"quantize", model, filepath.Join(dir, "q.gguf"), "--type", "tq2_0", "--warn-rel-err", "-1"}, "", 1, "quantize: --warn-rel-err: value -1 out of range [0, inf)"},
		{"quantize with --planes out of range is 1", []string{"quantize", model, filepath.Join(dir, "q.gguf"), "--type", "ptqtp", "--planes", "9"}, "", 1, "quantize: --planes: value 9 out of range [1, 3]"},
		{"quantize with --down-planes out of range is 1", []string{"quantize", model, filepath.Join(dir, "q.gguf"), "--type", "ptqtp", "--down-planes", "-1"}, "", 1, "quantize: --down-planes: value -1 out of range [1, 3]"},
		{"bench serve with --streams out of range is 1", []string{"bench", "serve", "--streams", "65"}, "", 1, "bench serve: --streams: value 65 out of range [1, 64]"},
		{"train with --steps out of range is 1", []string{"train", "--steps", "0"}, "", 1, "train: --steps: value 0 out of range [1, inf)"},
		{"bench model with no rounds is 1", []string{"bench", "model", "--rounds", "0"}, "", 1, "--rounds"},
		{"list with an unknown flag is 1", []string{"list", "--no-such-flag"}, "", 1, "unknown flag --no-such-flag"},
		{"create without a name is 1", []string{"create"}, "", 1, `expected "<MODEL>"`},
		{"an unknown command is 1", []string{"nosuchcommand"}, "", 1, "(see bankml --help)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLIInput(c.stdin, c.args...)
			if code != c.code || !strings.Contains(stderr, c.msg) {
				t.Errorf("bankml %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("bankml %s printed a Go panic: %s", strings.Join(c.args, " "), stderr)
			}
		})
	}
}

// TestCtxSizePastA32BitIntQuotesTheContextsOwnRange: a -c no command takes, even one past a 32-bit int, is refused
// quoting the range -c takes, [0, 2^30], not the 32-bit int's (which is wider, so never the bound that matters);
// serve's -np likewise quotes [1, 256].
func TestCtxSizePastA32BitIntQuotesTheContextsOwnRange(t *testing.T) {
	model := storiesPath(t)
	const tail = " out of range [0, 1073741824] (0: the model's training context)"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"run with -c 99999999999", []string{"run", model, "-p", "Once", "-c", "99999999999"}, "bankml: run: -c/--ctx-size: value 99999999999" + tail},
		{"run with -c 2147483648", []string{"run", model, "-p", "Once", "-c", "2147483648"}, "bankml: run: -c/--ctx-size: value 2147483648" + tail},
		{"run with -c -99999999999", []string{"run", model, "-p", "Once", "-c", "-99999999999"}, "bankml: run: -c/--ctx-size: value -99999999999" + tail},
		{"serve with -c 99999999999", []string{"serve", model, "--unpinned", "-c", "99999999999"}, "bankml: serve: -c/--ctx-size: value 99999999999" + tail},
		{"embed with -c 99999999999", []string{"embed", model, "-p", "hi", "-c", "99999999999"}, "bankml: embed: -c/--ctx-size: value 99999999999" + tail},
		// -np the same: its own range, not a 32-bit int's.
		{"serve with -np 3000000000", []string{"serve", model, "--unpinned", "-np", "3000000000"},
			"bankml: serve: -np/--parallel: value 3000000000 out of range [1, 256] (slots; 256 is llama.cpp's LLAMA_MAX_SEQ)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, c.want)
			}
		})
	}
}

// TestACacheTypeBankmlDoesNotTakeNamesTheFlagAndTheTypes: a -ctk/-ctv value bankml does not run is a usage error
// naming the flag, as its command's other errors are named, and the types it takes, with no package prefix.
func TestACacheTypeBankmlDoesNotTakeNamesTheFlagAndTheTypes(t *testing.T) {
	model := storiesPath(t)
	const allowed = " (allowed: f16, q8_0, q4_0)"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"run with -ctk q4_1", []string{"run", model, "-p", "Once", "-ctk", "q4_1"},
			"bankml: run: -ctk/--cache-type-k: cache type q4_1 is not supported by bankml" + allowed + " (see bankml run --help)"},
		{"serve with --cache-type-v=q5_0", []string{"serve", model, "--unpinned", "--cache-type-v=q5_0"},
			"bankml: serve: -ctv/--cache-type-v: cache type q5_0 is not supported by bankml" + allowed + " (see bankml serve --help)"},
		{"run with -ctv f8, a type llama.cpp does not take either", []string{"run", model, "-p", "Once", "-ctv", "f8"},
			`bankml: run: -ctv/--cache-type-v: unsupported cache type "f8" (allowed: f16, q8_0, q4_0; llama.cpp takes f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1) (see bankml run --help)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, c.want)
			}
		})
	}
}

// TestNPredictQuotesItsOwnRangeOnBothSides: run's -n outside what it takes, below -2 or past a 32-bit int, is
// refused quoting the one range -n takes, [-2, 2^31-1] with what -1 and -2 mean, as -c and -t quote theirs, not
// the 32-bit int's range on one side and its own on the other.
func TestNPredictQuotesItsOwnRangeOnBothSides(t *testing.T) {
	model := storiesPath(t)
	const tail = " out of range [-2, 2147483647] (-1: to an end-of-generation token, -2: until the context is full)"
	for _, c := range []struct {
		name string
		n    string
	}{
		{"just below -2", "-3"},
		{"below a 32-bit int", "-99999999999"},
		{"far below a 32-bit int", "-9223372036854775808"},
		{"just past a 32-bit int", "2147483648"},
		{"past a 32-bit int", "99999999999"},
		{"far past a 32-bit int", "9223372036854775807"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI("run", model, "-p", "Once", "-n", c.n)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			want := "bankml: run: -n/--n-predict: value " + c.n + tail
			if got := lines[len(lines)-1]; code != 1 || got != want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, want)
			}
		})
	}
}
