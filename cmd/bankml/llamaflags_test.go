package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestLlamaArgs checks the rewrite of llama.cpp's flags (common/arg.cpp's spellings, table llamaFlags)
// before kong parses: bankml's spelling for a mapped flag, an ignored flag taken out with its warning, the
// split of one-letter flags written with "=", a flag's value never rewritten, and the usage errors: a
// refused flag, a value arg.cpp refuses, a value missing at the end, a multi-letter single-dash flag that
// kong would misread.
func TestLlamaArgs(t *testing.T) {
	takesValue := func(s string) bool {
		return slices.Contains([]string{"-p", "--prompt", "-n", "-c", "--ctx-size", "--system", "--seed", "--temp", "--top-k", "--top-p", "--parallel", "--timeout", "--n-predict", "-a", "--alias", "--min-p", "--repeat-penalty", "--top-nsigma", "--typical", "--sampler-seq", "--logit-bias", "--dry-sequence-breaker"}, s)
	}
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	story, crlf, raw, empty := file("story.txt", "Once upon\n\n"), file("crlf.txt", "a\r\n"), file("raw.txt", "\\n-x\xff"), file("empty.txt", "")
	for _, c := range []struct {
		in, want []string
		warn     string // the warning lines, joined with "|"
		err      string // in the error
	}{
		{in: []string{"serve", "m.gguf", "-np", "4", "-c", "512"}, want: []string{"serve", "m.gguf", "--parallel", "4", "-c", "512"}},
		{in: []string{"serve", "m.gguf", "-np=2"}, want: []string{"serve", "m.gguf", "--parallel=2"}},
		{in: []string{"serve", "-m", "m.gguf", "-ngl", "99", "-fa", "on", "-cb", "-nocb", "-to", "5", "-lm", "mmap"},
			want: []string{"serve", "-m", "m.gguf", "--timeout", "5"},
			warn: "-ngl 99 ignored: bankml runs on the CPU only|-fa on ignored: bankml always runs flash attention, as llama.cpp's default auto does on the CPU|" +
				"-cb ignored: the engine always batches every slot's work into one forward pass (llama-server's default, -cb)|-nocb ignored: the engine always batches every slot's work into one forward pass (llama-server's default, -cb)|" +
				"-lm mmap ignored: bankml memory-maps the model file (only memory use differs, not results)"},
		{in: []string{"run", "m.gguf", "-ngl=all", "-fa", "auto"}, want: []string{"run", "m.gguf"}, warn: "-ngl all ignored: bankml runs on the CPU only|-fa auto ignored: bankml always runs flash attention, as llama.cpp's default auto does on the CPU"},
		{in: []string{"run", "m.gguf", "-p", "-ngl"}, want: []string{"run", "m.gguf", "-p", "-ngl"}}, // a prompt, as in llama.cpp
		{in: []string{"run", "m.gguf", "--", "-ngl"}, want: []string{"run", "m.gguf", "--", "-ngl"}},
		{in: []string{"tokenize", "m.gguf", "-ngl"}, err: "tokenize: unknown flag -ngl: llama.cpp's -ngl is taken by bankml run and serve, not by bankml tokenize"}, // kong would read -n -g -l
		{in: []string{"run", "m.gguf", "-p=Once", "-n=4"}, want: []string{"run", "m.gguf", "-p", "Once", "-n", "4"}},
		{in: []string{"run", "m.gguf", "-p=a=b", "-c="}, want: []string{"run", "m.gguf", "-p", "a=b", "-c", ""}},
		{in: []string{"run", "m.gguf", "-p", "-n=4"}, want: []string{"run", "m.gguf", "-p", "-n=4"}}, // a prompt
		{in: []string{"tokenize", "m.gguf", "-p=Once"}, want: []string{"tokenize", "m.gguf", "-p", "Once"}},
		{in: []string{"run", "m.gguf", "-x=1", "--prompt=-p=1"}, want: []string{"run", "m.gguf", "-x=1", "--prompt=-p=1"}},
		// Mapped to bankml's own flags (arg.cpp:1773, 1898, 1909, 1891, 1990, 2011, 1654).
		{in: []string{"run", "m.gguf", "-cnv", "-sys", "Be brief.", "-st"}, want: []string{"run", "m.gguf", "--chat", "--system", "Be brief.", "--single-turn"}},
		{in: []string{"run", "m.gguf", "--conversation", "--system-prompt", "-sp", "-no-cnv", "--no-conversation"},
			want: []string{"run", "m.gguf", "--chat", "--system", "-sp", "--no-chat", "--no-chat"}}, // -sp is the system text
		{in: []string{"run", "m.gguf", "-sp", "--special", "-s", "7", "--temperature", "0.5", "--predict", "3"},
			want: []string{"run", "m.gguf", "--special", "--special", "--seed", "7", "--temp", "0.5", "--n-predict", "3"}},
		{in: []string{"run", "m.gguf", "-s=7"}, want: []string{"run", "m.gguf", "--seed=7"}},
		// Sampling flags (arg.cpp:1982–2308): run's own spellings, the others refused; serve has no server-wide defaults.
		{in: []string{"run", "m.gguf", "--seed", "5", "--temperature", "0.5", "--top_p", "0.9", "--top-k", "3", "--ignore-eos"},
			want: []string{"run", "m.gguf", "--seed", "5", "--temp", "0.5", "--top-p", "0.9", "--top-k", "3", "--ignore-eos"}},
		{in: []string{"run", "m.gguf", "--seed=5", "--temp=1"}, want: []string{"run", "m.gguf", "--seed=5", "--temp=1"}},
		{in: []string{"run", "m.gguf", "--min-p", "0.1", "--repeat_penalty", "1.1", "--top-n-sigma", "1", "--typical-p", "0.9", "--sampling-seq", "kt", "-l", "2-inf"},
			want: []string{"run", "m.gguf", "--min-p", "0.1", "--repeat-penalty", "1.1", "--top-nsigma", "1", "--typical", "0.9", "--sampler-seq", "kt", "--logit-bias", "2-inf"}},
		{in: []string{"run", "m.gguf", "-l=1+2", "--dry-sequence-breaker", "-", "--dry-sequence-breaker", "none"},
			want: []string{"run", "m.gguf", "--logit-bias=1+2", "--dry-sequence-breaker", "-", "--dry-sequence-breaker", "none"},
			warn: "--dry-sequence-breaker is given more than once: every one counts, as in llama.cpp (whose warning says only the last does)"},
		{in: []string{"run", "m.gguf", "--repeat-penalty"}, err: "run: --repeat-penalty: expected a value"},
		{in: []string{"embed", "m.gguf", "-p", "hi", "-ctk", "q8_0"}, err: "embed: unknown flag -ctk: llama.cpp's -ctk is taken by bankml run and serve, not by bankml embed"},
		{in: []string{"perplexity", "m.gguf", "f.txt", "-ngl", "99"}, err: "perplexity: unknown flag -ngl: llama.cpp's -ngl is taken by bankml run and serve, not by bankml perplexity"},
		{in: []string{"embed", "m.gguf", "-xyz"}, err: "embed: unknown flag -xyz: bankml's single-dash flags are one letter"},
		// -b and -ub: serve's and embed's flags (the physical batch of embeddings), run's ignored.
		{in: []string{"serve", "m.gguf", "-ub", "2048", "-b=4096"}, want: []string{"serve", "m.gguf", "--ubatch-size", "2048", "--batch-size=4096"}},
		{in: []string{"embed", "m.gguf", "-ub", "2048", "-b", "4096", "--ubatch-size=8"}, want: []string{"embed", "m.gguf", "--ubatch-size", "2048", "-b", "4096", "--ubatch-size=8"}},
		{in: []string{"embed", "m.gguf", "-f", story}, want: []string{"embed", "m.gguf", "--prompt=Once upon\n"}},
		{in: []string{"run", "m.gguf", "-ub", "2048"}, want: []string{"run", "m.gguf"}, warn: "-ub 2048 ignored: bankml evaluates a prompt in micro-batches of 512 tokens, as llama.cpp's defaults -b 2048 -ub 512 do"},
		{in: []string{"perplexity", "m.gguf", "f.txt", "-ub", "1"}, err: "perplexity: unknown flag -ub: llama.cpp's -ub is taken by bankml run, serve and embed, not by bankml perplexity"},
		{in: []string{"embed", "m.gguf", "-p", "-ctk"}, want: []string{"embed", "m.gguf", "-p", "-ctk"}},
		{in: []string{"run", "m.gguf", "-jf", "s.json", "-j", "{}", "--grammar_file", "g.gbnf"},
			want: []string{"run", "m.gguf", "--json-schema-file", "s.json", "--json-schema", "{}", "--grammar-file", "g.gbnf"}},
		{in: []string{"run", "m.gguf", "--grammar", "root ::= x"}, want: []string{"run", "m.gguf", "--grammar", "root ::= x"}},
		{in: []string{"run", "m.gguf", "-bs"}, err: "run: -bs: not supported by bankml run: backend sampling is not implemented"},
		{in: []string{"serve", "m.gguf", "-j", "{}"}, err: "serve: -j: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--temp", "0.5"}, err: "serve: --temp: llama-server's server-wide sampling defaults are not supported by bankml serve: set them per request"},
		{in: []string{"serve", "m.gguf", "-s", "1"}, err: "serve: -s: llama-server's server-wide sampling defaults are not supported"},
		{in: []string{"serve", "m.gguf", "--seed=1"}, err: "serve: --seed: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--top-k", "1"}, err: "serve: --top-k: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--top_p", "1"}, err: "serve: --top-p: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--min-p", "0"}, err: "serve: --min-p: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--repeat-penalty", "1"}, err: "serve: --repeat-penalty: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--ignore-eos"}, err: "serve: --ignore-eos: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "-l", "15043+1"}, err: "serve: -l: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "-bs"}, err: "serve: -bs: llama-server's server-wide sampling defaults"},
		{in: []string{"serve", "m.gguf", "--mirostat", "2"}, err: "serve: --mirostat: llama-server's server-wide sampling defaults"},
		// What bankml always does (arg.cpp:3667, 3588), and what it cannot (arg.cpp:3668, 3007).
		{in: []string{"serve", "m.gguf", "--jinja", "--metrics"}, want: []string{"serve", "m.gguf"},
			warn: "--jinja ignored: bankml always renders the GGUF's chat template with its Jinja engine|--metrics ignored: bankml serve always serves /metrics"},
		{in: []string{"run", "m.gguf", "--jinja"}, want: []string{"run", "m.gguf"}, warn: "--jinja ignored: bankml always renders the GGUF's chat template with its Jinja engine"},
		{in: []string{"run", "m.gguf", "--metrics"}, err: "run: --metrics is a flag of bankml serve only"},
		{in: []string{"serve", "m.gguf", "--no-jinja"}, err: "serve: --no-jinja: bankml has no chat template path but Jinja's"},
		{in: []string{"run", "m.gguf", "--no-jinja"}, err: "run: --no-jinja: bankml has no chat template path but Jinja's"},
		// -a/--alias (arg.cpp:3007) is serve's own flag; given again, every one counts (its handler adds to a set).
		{in: []string{"serve", "m.gguf", "-a", "gpt-4", "--alias=x,y"}, want: []string{"serve", "m.gguf", "-a", "gpt-4", "--alias=x,y"}},
		{in: []string{"serve", "m.gguf", "-a", "x", "-a", "-y"}, want: []string{"serve", "m.gguf", "-a", "x", "-a", "-y"},
			warn: "-a is given more than once: every one counts, as in llama.cpp (whose warning says only the last does)"},
		{in: []string{"serve", "m.gguf", "-a"}, err: "serve: -a: expected a value"},
		// -f/--file FNAME (arg.cpp:1797): the file's text is the prompt, less one trailing newline; the last of -p and -f counts.
		{in: []string{"run", "m.gguf", "-f", story}, want: []string{"run", "m.gguf", "--prompt=Once upon\n"}},
		{in: []string{"run", "m.gguf", "--file", crlf, "-n", "1"}, want: []string{"run", "m.gguf", "--prompt=a\r", "-n", "1"}},
		{in: []string{"run", "m.gguf", "--file=" + raw}, want: []string{"run", "m.gguf", "--prompt=\\n-x\xff"}},
		{in: []string{"run", "m.gguf", "-f", empty}, want: []string{"run", "m.gguf", "--prompt="}},
		{in: []string{"run", "m.gguf", "-p", "Hi", "-f", story}, want: []string{"run", "m.gguf", "-p", "Hi", "--prompt=Once upon\n"}},
		{in: []string{"run", "m.gguf", "-f", filepath.Join(dir, "none.txt")}, err: "run: -f: failed to read the prompt file: open " + filepath.Join(dir, "none.txt")},
		{in: []string{"run", "m.gguf", "-f", dir}, err: "run: -f: failed to read the prompt file"},
		{in: []string{"run", "m.gguf", "-f"}, err: "run: -f: expected a value (FNAME)"},
		{in: []string{"serve", "m.gguf", "-f", story}, err: "serve: -f is a flag of bankml run and embed only"},
		// Ignored with a warning, the value checked as arg.cpp checks it.
		{in: []string{"run", "m.gguf", "-tb", "4", "-b", "64", "-ub", "32", "-nkvo", "-kvo"}, want: []string{"run", "m.gguf"},
			warn: "-tb 4 ignored: bankml evaluates the prompt with the -t threads|" +
				"-b 64 ignored: bankml evaluates a prompt in micro-batches of 512 tokens, as llama.cpp's defaults -b 2048 -ub 512 do|" +
				"-ub 32 ignored: bankml evaluates a prompt in micro-batches of 512 tokens, as llama.cpp's defaults -b 2048 -ub 512 do|" +
				"-nkvo ignored: bankml runs on the CPU only (no KV cache to offload)|-kvo ignored: bankml runs on the CPU only (no KV cache to offload)"},
		{in: []string{"serve", "m.gguf", "-dev", "none", "-sm", "row", "-ts", "3/1", "-mg", "0", "-fit", "off", "-cmoe", "-ncmoe", "2", "-ot", "exps=CPU,x=CPU", "-dt", "0.1", "-lv", "3", "-no-kvu"},
			want: []string{"serve", "m.gguf"},
			warn: "-dev none ignored: bankml runs on the CPU only|-sm row ignored: bankml runs on the CPU only (no GPUs to split over)|" +
				"-ts 3/1 ignored: bankml runs on the CPU only (no GPUs to split over)|-mg 0 ignored: bankml runs on the CPU only|" +
				"-fit off ignored: bankml runs on the CPU only (no device memory to fit)|-cmoe ignored: bankml keeps every tensor on the CPU already|" +
				"-ncmoe 2 ignored: bankml keeps every tensor on the CPU already|-ot exps=CPU,x=CPU ignored: bankml keeps every tensor on the CPU already|" +
				"-dt 0.1 ignored: deprecated; llama.cpp ignores it too|-lv 3 ignored: bankml has no log levels|" +
				"-no-kvu ignored: each bankml slot has its own KV cache, as llama-server's without --kv-unified"},
		{in: []string{"run", "m.gguf", "--cache-type-k", "f16", "--device=none", "-co", "auto"}, want: []string{"run", "m.gguf", "--cache-type-k", "f16"},
			warn: "-dev none ignored: bankml runs on the CPU only|-co auto ignored: bankml prints no colours"},
		// The KV cache types are bankml's own flags (model.ParseCacheType checks the value when kong parses).
		{in: []string{"run", "m.gguf", "-ctk", "q8_0", "-ctv", "q4_0"}, want: []string{"run", "m.gguf", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"}},
		{in: []string{"serve", "m.gguf", "-ctv", "q8_0"}, want: []string{"serve", "m.gguf", "--cache-type-v", "q8_0"}},
		{in: []string{"serve", "m.gguf", "-ctv", "q8_0", "-fa", "off"}, err: "serve: -ctv q8_0 with -fa off: quantized V cache requires flash_attn to be enabled"},
		{in: []string{"run", "m.gguf", "--flash-attn=false", "--cache-type-v=q4_0"}, err: "run: -ctv q4_0 with -fa false: quantized V cache requires flash_attn to be enabled"},
		{in: []string{"run", "m.gguf", "-fa", "off", "-ctk", "q8_0", "-ctv", "f16"}, want: []string{"run", "m.gguf", "--cache-type-k", "q8_0", "--cache-type-v", "f16"},
			warn: "-fa off ignored: bankml always runs flash attention, as llama.cpp's default auto does on the CPU; llama.cpp with -fa off takes another attention path whose results may differ in the last bits from bankml's"},
		{in: []string{"run", "m.gguf", "-tb", "x"}, err: `run: -tb/--threads-batch "x": must be an integer`},
		// Integers as std::stoi takes them, but whole: a 32-bit int (stoi's out_of_range past it), no trailing text.
		{in: []string{"run", "m.gguf", "-ngl", "99999999999"}, err: `run: -ngl/--gpu-layers/--n-gpu-layers: value 99999999999 out of range [-2147483648, 2147483647] (llama.cpp takes a 32-bit int)`},
		{in: []string{"serve", "m.gguf", "-tb", "2147483648"}, err: `serve: -tb/--threads-batch: value 2147483648 out of range`},
		{in: []string{"run", "m.gguf", "-mg", "-2147483649"}, err: `run: -mg/--main-gpu: value -2147483649 out of range`},
		{in: []string{"run", "m.gguf", "-ngl", "12abc"}, err: `run: -ngl/--gpu-layers/--n-gpu-layers "12abc": must be a number, auto or all`},
		{in: []string{"run", "m.gguf", "-b", "12abc"}, err: `run: -b/--batch-size "12abc": must be an integer`},
		{in: []string{"run", "m.gguf", "-ngl", "2147483647", "-tb", "+4", "-mg", "-2147483648"}, want: []string{"run", "m.gguf"},
			warn: "-ngl 2147483647 ignored: bankml runs on the CPU only|-tb +4 ignored: bankml evaluates the prompt with the -t threads|-mg -2147483648 ignored: bankml runs on the CPU only"},
		{in: []string{"run", "m.gguf", "-dev", "CUDA0"}, err: `run: -dev/--device "CUDA0": invalid device`},
		{in: []string{"run", "m.gguf", "-sm", "all"}, err: `-sm/--split-mode "all": must be one of none, layer, row, tensor`},
		{in: []string{"run", "m.gguf", "-ts", "3,x"}, err: `-ts/--tensor-split "3,x": "x" is not a number`},
		{in: []string{"run", "m.gguf", "-ot", "exps"}, err: `-ot/--override-tensor "exps": invalid value`},
		{in: []string{"run", "m.gguf", "-ot", "exps=CUDA0"}, err: `unknown buffer type "CUDA0"`},
		{in: []string{"run", "m.gguf", "-fit", "auto"}, err: `-fit/--fit "auto": must be on or off`},
		{in: []string{"run", "m.gguf", "-co", "red"}, err: `-co/--color "red": must be on, off or auto`},
		{in: []string{"run", "m.gguf", "-cb=1"}, err: "run: -cb takes no value"},
		// Refused: what bankml cannot honour, and llama.cpp's flags of the other tool.
		{in: []string{"run", "-hf", "ggml-org/gemma-3-1b-it-GGUF"}, err: "run: -hf: llama.cpp's download flags are not taken: pass a local GGUF file as MODEL or -m FNAME, or a store name (bankml pull downloads from the catalog)"},
		{in: []string{"serve", "--hf-repo", "a/b"}, err: "serve: --hf-repo: llama.cpp's download flags are not taken"},
		{in: []string{"run", "-mu", "https://x/m.gguf"}, err: "run: -mu: llama.cpp's download flags are not taken"},
		{in: []string{"run", "-hff", "m.gguf"}, err: "run: -hff: llama.cpp's download flags are not taken"},
		{in: []string{"serve", "m.gguf", "-kvu"}, err: "serve: -kvu: not supported by bankml: one KV cache shared by all slots (llama.cpp's unified cache) is not implemented; each bankml serve slot has its own KV cache of -c/-np tokens"},
		{in: []string{"serve", "m.gguf", "--kv_unified"}, err: "serve: --kv-unified: not supported by bankml: one KV cache shared by all slots"},
		{in: []string{"serve", "m.gguf", "-sp"}, err: "serve: -sp: bankml serve's answers carry no special-token text"},
		{in: []string{"run", "m.gguf", "-to", "5"}, err: "run: -to is a flag of bankml serve only"},
		{in: []string{"run", "m.gguf", "-np", "-to"}, err: `run: -np/--parallel "-to": must be an integer`},
		{in: []string{"run", "m.gguf", "--parallel", "2"}, want: []string{"run", "m.gguf"}, warn: "-np 2 ignored: bankml run decodes one sequence"},
		{in: []string{"serve", "m.gguf", "--parallel", "2"}, want: []string{"serve", "m.gguf", "--parallel", "2"}},
		{in: []string{"serve", "m.gguf", "-sys", "x"}, err: "serve: -sys is a flag of bankml run only"},
		{in: []string{"serve", "m.gguf", "-cnv"}, err: "serve: -cnv is a flag of bankml run only"},
		{in: []string{"run", "m.gguf", "-kvu"}, err: "run: -kvu: not supported by bankml: one KV cache shared by all slots (llama.cpp's unified cache) is not implemented"},
		{in: []string{"run", "m.gguf", "-no-kvu"}, err: "run: -no-kvu is a flag of bankml serve only"},
		{in: []string{"run", "m.gguf", "-rea", "on"}, err: "run: llama.cpp's -rea (--reasoning) is not supported by bankml run"},
		{in: []string{"serve", "m.gguf", "-cram", "64"}, want: []string{"serve", "m.gguf", "--cache-ram", "64"}},
		{in: []string{"run", "m.gguf", "-dio"}, err: "run: unknown flag -dio: bankml's single-dash flags are one letter"},
		{in: []string{"run", "m.gguf", "-pOnce"}, err: "run: unknown flag -pOnce"},
		// A flag given again: arg.cpp warns for each repeat of the same spelling (arg.cpp:826), the last one counts.
		{in: []string{"run", "m.gguf", "-n", "3", "-n", "2", "--temp", "1", "-n=1"}, want: []string{"run", "m.gguf", "-n", "3", "-n", "2", "--temp", "1", "-n", "1"},
			warn: "-n is given more than once: the last one counts, as in llama.cpp|-n is given more than once: the last one counts, as in llama.cpp"},
		{in: []string{"run", "m.gguf", "-n", "3", "--n-predict", "2", "-p", "-n"}, want: []string{"run", "m.gguf", "-n", "3", "--n-predict", "2", "-p", "-n"}}, // other spellings, a value
		{in: []string{"serve", "m.gguf", "-ngl", "1", "-ngl", "2"}, want: []string{"serve", "m.gguf"},
			warn: "-ngl 1 ignored: bankml runs on the CPU only|-ngl is given more than once: the last one counts, as in llama.cpp|-ngl 2 ignored: bankml runs on the CPU only"},
		{in: []string{"tokenize", "m.gguf", "-p", "a", "-p", "b"}, want: []string{"tokenize", "m.gguf", "-p", "a", "-p", "b"}}, // not llama.cpp's parser
		// "_" in a "--" flag reads as "-" (arg.cpp:821), not in a value nor in a single-dash flag.
		{in: []string{"run", "m.gguf", "--ctx_size", "256", "--n_predict=4", "--top_k", "5", "--prompt", "a_b", "--ignore_eos", "--single_turn", "--system_prompt", "x"},
			want: []string{"run", "m.gguf", "--ctx-size", "256", "--n-predict=4", "--top-k", "5", "--prompt", "a_b", "--ignore-eos", "--single-turn", "--system", "x"}},
		{in: []string{"serve", "m.gguf", "--n_gpu_layers", "1", "--api_key", "k", "--ctx-size", "1", "--ctx_size", "2"}, want: []string{"serve", "m.gguf", "--api-key", "k", "--ctx-size", "1", "--ctx-size", "2"},
			warn: "-ngl 1 ignored: bankml runs on the CPU only|--ctx-size is given more than once: the last one counts, as in llama.cpp"},
		{in: []string{"tokenize", "m.gguf", "--no_parse_special"}, want: []string{"tokenize", "m.gguf", "--no_parse_special"}},
		// A value missing: arg.cpp takes the next argument as the value (then checks it) and errors at the end.
		{in: []string{"run", "m.gguf", "-fa", "-p", "Once"}, err: `run: -fa/--flash-attn "-p": must be on, off or auto (-fa takes the next argument as its value: give one before -p)`},
		{in: []string{"run", "m.gguf", "-ngl", "-p", "Once"}, err: `run: -ngl/--gpu-layers/--n-gpu-layers "-p": must be a number, auto or all (-ngl takes the next argument`},
		{in: []string{"run", "m.gguf", "-p", "Once", "-fa"}, err: "run: -fa: expected a value (on|off|auto)"},
		{in: []string{"run", "m.gguf", "-p"}, err: "run: -p: expected a value"},
		{in: []string{"run", "m.gguf", "-sys"}, err: "run: -sys: expected a value"},
		{in: []string{"tokenize", "m.gguf", "-p"}, err: "tokenize: -p: expected a value"},
	} {
		got, warn, err := llamaArgs(c.in, takesValue)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.in, err)
		case !slices.Equal(got, c.want) || strings.Join(warn, "|") != c.warn:
			t.Errorf("%q: %q, warnings %q; want %q, %q", c.in, got, warn, c.want, c.warn)
		}
	}
}

// TestServeBatchFlagsSetTheEmbeddingPhysicalBatch: serve's -ub/--ubatch-size and -b/--batch-size, written as
// llama-server's users write them, give the physical batch of an embedding as llama-server's n_ubatch: -ub
// (512 by default), at most -b (2048 by default).
func TestServeBatchFlagsSetTheEmbeddingPhysicalBatch(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"serve", "m.gguf"}, 512},
		{[]string{"serve", "m.gguf", "-ub", "2048"}, 2048},
		{[]string{"serve", "m.gguf", "--ubatch-size=1000"}, 1000},
		{[]string{"serve", "m.gguf", "-ub", "4096"}, 2048}, // -b's default bounds it, as in llama-server
		{[]string{"serve", "m.gguf", "-ub", "4096", "-b", "8192"}, 4096},
		{[]string{"serve", "m.gguf", "-b", "256"}, 256},
		{[]string{"serve", "m.gguf", "--batch_size", "300", "--ubatch_size", "400"}, 300},
	} {
		var cl cli
		parser, err := kong.New(&cl, kong.Vars{"nproc": "1", "version": "test"}, kong.WithHyphenPrefixedParameters(true))
		if err != nil {
			t.Fatal(err)
		}
		args, _, err := llamaArgs(c.args, valueFlags(parser.Model, "serve"))
		if err == nil {
			_, err = parser.Parse(args)
		}
		if got := cl.Serve.embedUBatch(); err != nil || got != c.want {
			t.Errorf("%q: physical batch %d, %v; want %d", c.args, got, err, c.want)
		}
	}
}

// TestServeAliasFlag checks that serve's -a/--alias values reach the command as llama-server's parser takes
// them: comma-separated, every flag's values added (serve.Options.Alias strips and sorts them).
func TestServeAliasFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "m.gguf"}, nil},
		{[]string{"serve", "m.gguf", "-a", "tiny"}, []string{"tiny"}},
		{[]string{"serve", "m.gguf", "-a", " b, a", "--alias=c"}, []string{" b", " a", "c"}},
		{[]string{"serve", "m.gguf", "--alias", "x,,y", "-a", "-z"}, []string{"x", "", "y", "-z"}},
	} {
		var cl cli
		parser, err := kong.New(&cl, kong.Vars{"nproc": "1", "version": "test"}, kong.WithHyphenPrefixedParameters(true))
		if err != nil {
			t.Fatal(err)
		}
		args, _, err := llamaArgs(c.args, valueFlags(parser.Model, "serve"))
		if err == nil {
			_, err = parser.Parse(args)
		}
		if err != nil || !slices.Equal([]string(cl.Serve.Alias), c.want) {
			t.Errorf("%q: alias %q, %v; want %q", c.args, cl.Serve.Alias, err, c.want)
		}
	}
}

// TestLlamaModelAndIgnoredFlags runs `bankml run` as a llama-cli user types it: -m/--model for the model,
// and the flags bankml ignores, each with its one warning line (or a usage error for a value llama.cpp
// refuses too).
func TestLlamaModelAndIgnoredFlags(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	gen := []string{"-p", "Once upon a time", "-n", "2"}
	link, other := filepath.Join(dir, "link.gguf"), filepath.Join(dir, "other.gguf")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(dir, "models")
	if err := os.Symlink(filepath.Dir(model), linkDir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string // in stderr
		not  string   // not in stderr
	}{
		{[]string{"run", "-m", model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", "--model", model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", "--model=" + model}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", model, "-m", model}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", model, "-m", model + ".other"}, 1, []string{"the model is given twice", "-m/--model"}, "generated"},
		{[]string{"run", model, "-m", filepath.Dir(model) + "/../" + filepath.Base(filepath.Dir(model)) + "/" + filepath.Base(model)}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", model, "-m", filepath.Join(linkDir, filepath.Base(model))}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", link, "-m", model}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", "--model=" + link, model}, 0, []string{"generated: 2 tokens"}, "twice"},
		{[]string{"run", link, "-m", other}, 1, []string{"the model is given twice"}, "generated"},
		{[]string{"serve", link, "-m", model, "--unpinned", "-np", "0"}, 1, []string{"bankml: serve: -np/--parallel: value 0 out of range [1, 256]"}, "twice"},
		// kong's own errors point at the command's --help; --ctx is -c on both commands.
		{[]string{"run", "-m", model, "--no-such-flag"}, 1, []string{"unknown flag --no-such-flag", "(see bankml run --help)\n"}, "generated"},
		{[]string{"serve", model, "--unpinned", "--no-such-flag"}, 1, []string{"unknown flag --no-such-flag", "(see bankml serve --help)\n"}, "listening"},
		{[]string{"nosuchcommand"}, 1, []string{"(see bankml --help)"}, "generated"},
		{[]string{"run", "-m", model, "--ctx", "256"}, 0, []string{"generated: 2 tokens"}, "unknown"},
		{[]string{"serve", model, "--unpinned", "--ctx", "-1"}, 1, []string{"-c/--ctx-size: value -1 out of range [0, 1073741824]"}, "listening"},
		{[]string{"run"}, 1, []string{`expected "<MODEL>"`}, "generated"},
		{[]string{"run", dir}, 1, []string{"bankml: run: MODEL: " + dir + " is a directory, not a GGUF file (see bankml run --help)\n"}, "d---"},
		{[]string{"run", "-m", dir}, 1, []string{"bankml: run: -m/--model: " + dir + " is a directory, not a GGUF file"}, "generated"},
		{[]string{"serve", dir, "--unpinned"}, 1, []string{"bankml: serve: MODEL: " + dir + " is a directory, not a GGUF file"}, "listening"},
		{[]string{"serve", "--model=" + dir, "--unpinned"}, 1, []string{"bankml: serve: -m/--model: " + dir + " is a directory, not a GGUF file"}, "listening"},
		{[]string{"run", "-m", model, "-ngl", "99"}, 0, []string{"bankml: -ngl 99 ignored: bankml runs on the CPU only\n", "generated"}, ""},
		{[]string{"run", "-m", model, "--gpu-layers", "all"}, 0, []string{"bankml: -ngl all ignored"}, ""},
		{[]string{"run", "-m", model, "--n-gpu-layers=auto"}, 0, []string{"bankml: -ngl auto ignored"}, ""},
		{[]string{"run", "-m", model, "-ngl", "many"}, 1, []string{`-ngl/--gpu-layers/--n-gpu-layers "many"`}, "generated"},
		{[]string{"run", "-m", model, "-fa", "on"}, 0, []string{"bankml: -fa on ignored: bankml always runs flash attention"}, "differ"},
		{[]string{"run", "-m", model, "--flash-attn", "off"}, 0, []string{"bankml: -fa off ignored", "may differ in the last bits"}, ""},
		{[]string{"run", "-m", model, "-fa", "yes"}, 1, []string{`-fa/--flash-attn "yes"`}, "generated"},
		{[]string{"run", "-m", model, "-cb"}, 0, []string{"bankml: -cb ignored"}, ""},
		{[]string{"run", "-m", model, "-nocb"}, 0, []string{"bankml: -nocb ignored"}, ""},
		{[]string{"run", "-m", model, "-p", "Hi", "-n", "5"}, 0, []string{"bankml: -p is given more than once: the last one counts, as in llama.cpp\nbankml: -n is given more than once", "prompt: 5 tokens", "generated: 2 tokens"}, "ignored"},
		{[]string{"run", "--model", model, "--ctx_size", "256", "--n_predict", "1", "--n-predict", "3", "--ignore_eos"}, 0, []string{"bankml: --n-predict is given more than once", "generated: 2 tokens"}, "ignored"},
		{[]string{"run", "-m", model, "-cb", "-nocb"}, 0, []string{"bankml: -cb ignored", "bankml: -nocb ignored"}, ""},
		{[]string{"run", "-m", model, "-fa", "-p", "Once"}, 1, []string{`-fa/--flash-attn "-p": must be on, off or auto`, "(see bankml run --help)"}, "generated"},
		{[]string{"run", "-m", model, "-hf", "a/b"}, 1, []string{"-hf: llama.cpp's download flags are not taken"}, "generated"},
		{[]string{"run", "-m", model, "-tb", "2", "-ctk", "f16"}, 0, []string{"bankml: -tb 2 ignored", "generated: 2 tokens"}, "-ctk"},
		{[]string{"run", "-m", model, "-ctk", "q8_0"}, 2, []string{"K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"}, "generated"},
		{[]string{"run", "-m", model, "-ctv", "q4_1"}, 1, []string{"cache type q4_1 is not supported by bankml (allowed: f16, q8_0, q4_0)"}, "generated"},
		{[]string{"run", "-m", model, "-ctv", "f8"}, 1, []string{`unsupported cache type "f8" (allowed: f16, q8_0, q4_0; llama.cpp takes f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)`}, "generated"},
		{[]string{"run", "-m", model, "-cnv", "-st", "-sys", "Be brief."}, 0, []string{"turn 1:"}, "generated"},
		{[]string{"run", "-m", model, "-cnv", "-sp"}, 1, []string{"run: --special (-sp) prints control tokens of a plain run only, not with --chat"}, "turn"},
		{[]string{"run", "-m", model, "-sp"}, 0, []string{"generated: 2 tokens"}, "ignored"},
		{[]string{"run", "-m", model, "-sys", "Be brief."}, 1, []string{"--system (-sys) and --single-turn (-st) need --chat (-cnv)"}, "generated"},
		{[]string{"run", "-m", model, "--mlock", "--no-mmap"}, 0, []string{"bankml: --mlock ignored", "bankml: --no-mmap ignored"}, ""},
		{[]string{"run", "-m", model, "-lm", "mmap+mlock"}, 0, []string{"bankml: -lm mmap+mlock ignored"}, ""},
		{[]string{"run", "-m", model, "--load-mode", "fast"}, 1, []string{`-lm/--load-mode "fast"`}, "generated"},
		{[]string{"serve", "-m", model, "--unpinned", "-ngl", "99", "-np", "0"}, 1, []string{"bankml: -ngl 99 ignored", "-np/--parallel: value 0 out of range"}, "listening"},
		{[]string{"serve", "--model", model, "-fa", "nope"}, 1, []string{`-fa/--flash-attn "nope"`}, "listening"},
		{[]string{"serve", model, "-m", model + ".other"}, 1, []string{"the model is given twice"}, "listening"},
		{[]string{"serve", model, "--unpinned", "-to", "0"}, 1, []string{"-to/--timeout: value 0 out of range [1, 2147483647] (seconds)"}, "listening"},
		{[]string{"serve", model, "--unpinned", "--timeout=-5"}, 1, []string{"-to/--timeout: value -5 out of range [1, 2147483647]"}, "listening"},
		{[]string{"serve", "--unpinned"}, 1, []string{`without MODEL (serving the store)`, `--unpinned`}, "listening"}, // no MODEL: the store server (issue 21), which every model pins by its manifest
	} {
		args := c.args
		if args[0] == "run" && len(args) > 1 {
			args = append(slices.Clone(args), gen...)
		}
		code, _, stderr := runCLI(args...)
		ok := code == c.code && (c.not == "" || !strings.Contains(stderr, c.not))
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if ok && strings.Count(stderr, "ignored") != strings.Count(strings.Join(c.want, "|"), "ignored") {
			ok = false // one line per flag
		}
		if !ok {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q, not %q", c.args, code, stderr, c.code, c.want, c.not)
		}
	}
}

// TestLlamaFlagsTableAgreesWithKong checks the table against the commands' kong flags: every flag a
// mapped entry names exists in each of its commands, no ignored or refused spelling shadows a flag the
// command has itself, and a spelling of one command's entry that the other command has itself is in
// that command's entry too (lookupLlama would refuse it as the other command's).
func TestLlamaFlagsTableAgreesWithKong(t *testing.T) {
	parser, err := kong.New(&cli{}, kong.Vars{"nproc": "1", "version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	native := map[string]map[string]bool{}
	for _, c := range parser.Model.Children {
		set := map[string]bool{}
		for _, f := range c.Flags {
			set["--"+f.Name] = true
			if f.Tag.Negatable != "" {
				set["--no-"+f.Name] = true
			}
			for _, a := range f.Aliases {
				set["--"+a] = true
			}
			if f.Short != 0 {
				set["-"+string(f.Short)] = true
			}
		}
		native[c.Name] = set
	}
	for _, f := range llamaFlags {
		for _, cmd := range slices.Concat(onEmbed, onPerplexity) { // only their own entries apply to them
			if !slices.Contains(f.cmds, cmd) {
				continue
			}
			if f.to != "" && !native[cmd][f.to] {
				t.Errorf("%v: %s has no flag %s", f.names, cmd, f.to)
			}
			for _, n := range f.names {
				if native[cmd][n] && f.to != n {
					t.Errorf("%v: %s's own flag %s is taken by the table", f.names, cmd, n)
				}
			}
		}
		for _, cmd := range onBoth {
			ours := slices.Contains(f.cmds, cmd)
			if ours && f.to != "" && !native[cmd][f.to] {
				t.Errorf("%v: %s has no flag %s", f.names, cmd, f.to)
			}
			for _, n := range f.names {
				if !native[cmd][n] || (ours && f.to == n) {
					continue
				}
				if e := lookupLlama(n, cmd); e == nil || e.to != n {
					t.Errorf("%v: %s's own flag %s is taken by the table", f.names, cmd, n)
				}
			}
		}
	}
}

// TestRunPromptFile runs `bankml run -f FNAME` as llama-cli's -f (arg.cpp:1797): the file's text, less one
// trailing newline and with -e's escapes, is the prompt, and the last of -p and -f counts. Each run is
// compared with the same prompt given to -p (the path the reference's continuation checks).
func TestRunPromptFile(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	story, escaped := filepath.Join(dir, "story.txt"), filepath.Join(dir, "escaped.txt")
	if err := os.WriteFile(story, []byte("Once upon a time\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(escaped, []byte(`The cat\nsat`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, asP []string }{
		{[]string{"-f", story}, []string{"-p", "Once upon a time"}},
		{[]string{"--file=" + story}, []string{"-p", "Once upon a time"}},
		{[]string{"-p", "The cat", "-f", story}, []string{"-p", "Once upon a time"}},
		{[]string{"-f", story, "-p", "The cat"}, []string{"-p", "The cat"}},
		{[]string{"-f", escaped}, []string{"-p", "The cat\nsat", "--no-escape"}},
		{[]string{"-f", escaped, "--no-escape"}, []string{"-p", `The cat\nsat`, "--no-escape"}},
	} {
		args := append([]string{"run", model, "-n", "8", "-t", "1"}, c.file...)
		code, out, stderr := runCLI(args...)
		wcode, want, wstderr := runCLI(append([]string{"run", model, "-n", "8", "-t", "1"}, c.asP...)...)
		if code != 0 || wcode != 0 || out != want || out == "\n" {
			t.Errorf("%q: exit %d, %q (%s); as -p: exit %d, %q (%s)", c.file, code, out, stderr, wcode, want, wstderr)
		}
	}
}

// TestLlamaEnvWarnings: each LLAMA_ARG_* variable (common/arg.cpp's set_env names; LLAMA_ARG_NO_* for a
// negative spelling) gets one line saying bankml does not read it and which flag it stands for; other
// variables get none.
func TestLlamaEnvWarnings(t *testing.T) {
	const tail = ": bankml does not read llama.cpp's environment variables"
	for _, c := range []struct {
		env  []string
		want string // the lines, joined with "|"
	}{
		{[]string{"HOME=/root", "BANKML_API_KEY=k", "LLAMA_ARGS=1"}, ""},
		{[]string{"LLAMA_ARG_CTX_SIZE=256"}, "LLAMA_ARG_CTX_SIZE is set" + tail + " (llama.cpp's -c/--ctx-size); give the flag on the command line"},
		{[]string{"LLAMA_ARG_TEMPERATURE=0.5", "PATH=/bin", "LLAMA_ARG_N_GPU_LAYERS=99"},
			"LLAMA_ARG_N_GPU_LAYERS is set" + tail + " (llama.cpp's -ngl/--gpu-layers/--n-gpu-layers); give the flag on the command line|" +
				"LLAMA_ARG_TEMPERATURE is set" + tail + " (llama.cpp's --temp/--temperature); give the flag on the command line"},
		{[]string{"LLAMA_ARG_NO_JINJA=1", "LLAMA_ARG_KV_UNIFIED="}, "LLAMA_ARG_KV_UNIFIED is set" + tail + " (llama.cpp's -kvu/--kv-unified); give the flag on the command line|" +
			"LLAMA_ARG_NO_JINJA is set" + tail + " (llama.cpp's --no-jinja); give the flag on the command line"},
		{[]string{"LLAMA_ARG_WHATEVER=1"}, "LLAMA_ARG_WHATEVER is set" + tail + "; give the flag on the command line"},
	} {
		if got := strings.Join(llamaEnvWarnings(c.env), "|"); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.env, got, c.want)
		}
	}
}

// TestRunWarnsOfLlamaEnv: with LLAMA_ARG_* variables set, run and serve print one line for each and run as
// they would without them.
func TestRunWarnsOfLlamaEnv(t *testing.T) {
	model := storiesPath(t)
	args := []string{"run", model, "-p", "Once upon a time", "-n", "4", "-t", "1"}
	_, want, _ := runCLI(args...)
	t.Setenv("LLAMA_ARG_CTX_SIZE", "64")
	t.Setenv("LLAMA_ARG_N_PREDICT", "1")
	code, out, stderr := runCLI(args...)
	lines := "bankml: LLAMA_ARG_CTX_SIZE is set: bankml does not read llama.cpp's environment variables (llama.cpp's -c/--ctx-size); give the flag on the command line\n" +
		"bankml: LLAMA_ARG_N_PREDICT is set: bankml does not read llama.cpp's environment variables (llama.cpp's -n/--predict/--n-predict); give the flag on the command line\n"
	if code != 0 || out != want || !strings.HasPrefix(stderr, lines) || strings.Count(stderr, "LLAMA_ARG_") != 2 {
		t.Errorf("exit %d, %q, stderr %q; want 0, %q, stderr starting %q", code, out, stderr, want, lines)
	}
	code, _, stderr = runCLI("serve", model, "--unpinned", "-np", "0")
	if code != 1 || !strings.Contains(stderr, lines) {
		t.Errorf("serve: exit %d, stderr %q; want 1 after %q", code, stderr, lines)
	}
}

// TestRunAsLlamaCliUsersTypeIt: the display and log flags llama-completion users type (common/arg.cpp) do
// what they do there: the prompt is echoed before its continuation unless --no-display-prompt (checked
// against the reference's pieces in TestRunPrintsTheReferenceContinuation); --verbose-prompt lists the
// prompt's tokens on standard error; --log-disable leaves standard error empty; -no-cnv, --simple-io,
// --no-warmup, --no-perf, -v and --log-colors are accepted (the last five with a warning each).
func TestRunAsLlamaCliUsersTypeIt(t *testing.T) {
	model := storiesPath(t)
	base := []string{"run", model, "-p", "Once upon a time", "-n", "6", "-t", "1"}
	_, plain, _ := runCLI(append(slices.Clone(base), "--no-display-prompt")...)
	if !strings.HasPrefix(plain, ",") {
		t.Fatalf("the continuation %q", plain)
	}
	for _, c := range []struct {
		name         string
		args         []string
		stdout       string   // exactly
		stderr       []string // in stderr
		emptyStderr  bool
		warningLines int
	}{
		{"the default echoes the prompt", nil, " Once upon a time" + plain, []string{"generated: 6 tokens"}, false, 0},
		{"--display-prompt is the default", []string{"--display-prompt"}, " Once upon a time" + plain, nil, false, 0},
		{"--no-display-prompt", []string{"--no-display-prompt"}, plain, nil, false, 0},
		{"--verbose-prompt", []string{"--verbose-prompt"}, " Once upon a time" + plain,
			[]string{"run: prompt: 'Once upon a time'\nrun: number of tokens in prompt = 5\n     1 -> '<s>'\n", " -> ' Once'\n"}, false, 0},
		{"--log-disable: nothing on standard error", []string{"--log-disable", "--no-display-prompt", "-no-cnv"}, plain, nil, true, 0},
		{"llama-cli's other console flags", []string{"--simple-io", "--no-warmup", "--no-perf", "-v", "--log-colors", "off", "-no-cnv"}, " Once upon a time" + plain,
			[]string{"bankml: --simple-io ignored", "bankml: --no-warmup ignored", "bankml: --no-perf ignored", "bankml: -v ignored: bankml has no log levels", "bankml: --log-colors off ignored"}, false, 5},
	} {
		code, out, stderr := runCLI(append(slices.Clone(base), c.args...)...)
		ok := code == 0 && out == c.stdout && (!c.emptyStderr || stderr == "") && strings.Count(stderr, "ignored") == c.warningLines
		for _, w := range c.stderr {
			ok = ok && strings.Contains(stderr, w)
		}
		if !ok {
			t.Errorf("%s: exit %d\nstdout %q (want %q)\nstderr %q (want %q)", c.name, code, out, c.stdout, stderr, c.stderr)
		}
	}
	if code, _, stderr := runCLI(append(slices.Clone(base), "--log-colors", "red")...); code != 1 || !strings.Contains(stderr, `--log-colors "red": must be on, off or auto`) {
		t.Errorf("--log-colors red: exit %d, %q", code, stderr)
	}
}
