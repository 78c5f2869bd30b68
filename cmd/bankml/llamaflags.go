package main

// llama.cpp command-line compatibility of `bankml run` and `bankml serve`: what a llama-cli /
// llama-completion / llama-server user types, following common/arg.cpp at the reference's commit.
//
//   - -m/--model FNAME names the model, as the positional MODEL does (resolveModel).
//   - llama.cpp's flags are rewritten before kong parses (llamaArgs), by the table llamaFlags: a flag with a
//     bankml equivalent becomes bankml's spelling (-sys is --system, -cnv is --chat, -np is --parallel); a
//     flag that only tunes what bankml does not have (GPUs, batch sizes, the file's loading) is taken out,
//     its value checked as arg.cpp checks it, with one warning line on stderr naming it and why; a flag
//     bankml cannot honour (-hf: a download; serve's sampling defaults) is a usage error naming it and
//     why; -f FNAME gives the file's text to --prompt as arg.cpp reads it (readPromptFile). Any other
//     multi-letter single-dash flag is a usage error too, and so is one given to any other command (embed
//     -ctk, perplexity -ngl): kong would read it as a cluster of one-letter flags (-ngl as -n -g -l, -ctk as
//     -c tk), a misread. The entries naming embed (llama-embedding's -ub and -f) or perplexity apply to those
//     commands as they say; nothing else of this handling does.
//   - As in arg.cpp (common_params_parse's parse_cli_args): a flag taking a value takes the next token
//     whatever it is, and one at the end of the line is a usage error ("expected value for argument"); a
//     flag given again warns and the last one counts; "_" in a "--" flag's name reads as "-" (--ctx_size).
//
// Deliberate differences: bankml takes "--flag=value" and "-p=value" (arg.cpp refuses both), and numbers
// are checked whole (arg.cpp's std::stoi takes "12abc" as 12, and " 12" too; bankml refuses both); like
// stoi, bankml refuses an integer outside a 32-bit int (-ngl 99999999999).

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// llamaFlag is one of common/arg.cpp's flags in a bankml command's table: mapped to bankml's own flag
// (to), accepted and ignored with a warning (why), or refused (refuse).
type llamaFlag struct {
	names []string // arg.cpp's spellings; the first is the one messages give
	cmds  []string // the commands that take it: "run" (llama-cli, llama-completion), "serve" (llama-server)
	to    string   // bankml's flag the token is rewritten to; kong parses its value
	value string   // ignored or refused: the placeholder of the value it takes ("" when none)
	// check, for an ignored flag with a value, refuses a value arg.cpp refuses (the error says what is
	// accepted), and may return a note to append to the warning; nil takes any value.
	check  func(v string) (note string, err error)
	why    string // ignored: the warning's reason
	refuse string // refused: why, in the usage error
	// file: the value is a file whose text is given to (to) as its value ("to=TEXT"), read as arg.cpp's -f
	// reads it (readPromptFile).
	file bool
}

var (
	onRun   = []string{"run"}
	onServe = []string{"serve"}
	onBoth  = []string{"run", "serve"}
	// embed (llama-embedding) and perplexity (llama-perplexity) take the table's entries that name them, and
	// nothing else of its handling (llamaArgs).
	onEmbed      = []string{"embed"}
	onPerplexity = []string{"perplexity"}
)

// llamaFlags is the table llamaArgs reads (common/arg.cpp's names; its line for each in the comment).
var llamaFlags = slices.Concat([]llamaFlag{
	// Flags bankml has under another spelling.
	{names: []string{"-cram", "--cache-ram"}, cmds: onServe, to: "--cache-ram"},                                              // arg.cpp:1713
	{names: []string{"-sys", "--system-prompt"}, cmds: onRun, to: "--system"},                                                // arg.cpp:1773
	{names: []string{"-cnv", "--conversation"}, cmds: onRun, to: "--chat"},                                                   // arg.cpp:1898
	{names: []string{"-no-cnv", "--no-conversation"}, cmds: onRun, to: "--no-chat"},                                          // arg.cpp:1898
	{names: []string{"-st"}, cmds: onRun, to: "--single-turn"},                                                               // arg.cpp:1909
	{names: []string{"-sp", "--special"}, cmds: onRun, to: "--special"},                                                      // arg.cpp:1891
	{names: []string{"--log-disable"}, cmds: onRun, to: "--log-disable"},                                                     // arg.cpp:3869
	{names: []string{"-f", "--file"}, cmds: onRun, to: "--prompt", value: "FNAME", file: true},                               // arg.cpp:1797
	{names: []string{"--predict"}, cmds: onRun, to: "--n-predict"},                                                           // arg.cpp:1654
	{names: []string{"-np", "--parallel"}, cmds: onServe, to: "--parallel"},                                                  // arg.cpp:2540
	{names: []string{"-np", "--parallel"}, cmds: onRun, value: "N", check: checkInt, why: "bankml run decodes one sequence"}, // arg.cpp:2551
	{names: []string{"-to"}, cmds: onServe, to: "--timeout"},                                                                 // arg.cpp:3547
	{names: []string{"-ctk", "--cache-type-k"}, cmds: onBoth, to: "--cache-type-k"},                                          // arg.cpp:2433
	{names: []string{"-ctv", "--cache-type-v"}, cmds: onBoth, to: "--cache-type-v"},                                          // arg.cpp:2446
	{names: []string{"-sp", "--special"}, cmds: onServe, refuse: "bankml serve's answers carry no special-token text"},       // arg.cpp:1891
	{names: []string{"-b", "--batch-size"}, cmds: onServe, to: "--batch-size"},                                               // arg.cpp:1665
	{names: []string{"-ub", "--ubatch-size"}, cmds: onServe, to: "--ubatch-size"},                                            // arg.cpp:1672
	{names: []string{"-ub", "--ubatch-size"}, cmds: onEmbed, to: "--ubatch-size"},                                            // arg.cpp:1672
	{names: []string{"-f", "--file"}, cmds: onEmbed, to: "--prompt", value: "FNAME", file: true},                             // arg.cpp:1797
	{names: []string{"-r", "--reverse-prompt"}, cmds: onRun, to: "--reverse-prompt"},                                         // arg.cpp:1885
	{names: []string{"-r", "--reverse-prompt"}, cmds: onServe, value: "PROMPT", refuse: llamaNoServerStop},                   // arg.cpp:1885

	// Flags that only tune what bankml does not have.
	{names: []string{"-ngl", "--gpu-layers", "--n-gpu-layers"}, cmds: onBoth, value: "N", check: checkGPULayers, why: "bankml runs on the CPU only"},                                                                          // arg.cpp:2784
	{names: []string{"-fa", "--flash-attn"}, cmds: onBoth, value: "on|off|auto", check: checkFlashAttn, why: "bankml always runs flash attention, as llama.cpp's default auto does on the CPU"},                               // arg.cpp:1751
	{names: []string{"-cb", "--cont-batching"}, cmds: onBoth, why: "the engine always batches every slot's work into one forward pass (llama-server's default, -cb)"},                                                         // arg.cpp:2566
	{names: []string{"-nocb", "--no-cont-batching"}, cmds: onBoth, why: "the engine always batches every slot's work into one forward pass (llama-server's default, -cb)"},                                                    // arg.cpp:2566
	{names: []string{"-lm", "--load-mode"}, cmds: onBoth, value: "MODE", check: oneOf("auto", "none", "mmap", "mlock", "mmap+mlock", "dio"), why: "bankml memory-maps the model file (only memory use differs, not results)"}, // arg.cpp:2686
	{names: []string{"--mlock"}, cmds: onBoth, why: "bankml memory-maps the model file and does not lock it in RAM (only memory use differs, not results)"},                                                                   // older llama.cpp
	{names: []string{"--no-mmap"}, cmds: onBoth, why: "bankml memory-maps the model file (only memory use differs, not results)"},                                                                                             // older llama.cpp
	{names: []string{"-tb", "--threads-batch"}, cmds: onBoth, value: "N", check: checkInt, why: "bankml evaluates the prompt with the -t threads"},                                                                            // arg.cpp:1523
	{names: []string{"-b", "--batch-size"}, cmds: onRun, value: "N", check: checkInt, why: "bankml evaluates a prompt in micro-batches of 512 tokens, as llama.cpp's defaults -b 2048 -ub 512 do"},                            // arg.cpp:1665
	{names: []string{"-ub", "--ubatch-size"}, cmds: onRun, value: "N", check: checkInt, why: "bankml evaluates a prompt in micro-batches of 512 tokens, as llama.cpp's defaults -b 2048 -ub 512 do"},                          // arg.cpp:1672
	{names: []string{"-kvo", "--kv-offload"}, cmds: onBoth, why: "bankml runs on the CPU only (no KV cache to offload)"},                                                                                                      // arg.cpp:2410
	{names: []string{"-nkvo", "--no-kv-offload"}, cmds: onBoth, why: "bankml runs on the CPU only (no KV cache to offload)"},                                                                                                  // arg.cpp:2410
	{names: []string{"-dev", "--device"}, cmds: onBoth, value: "none", check: checkDevice, why: "bankml runs on the CPU only"},                                                                                                // arg.cpp:2733
	{names: []string{"-sm", "--split-mode"}, cmds: onBoth, value: "none|layer|row|tensor", check: oneOf("none", "layer", "row", "tensor"), why: "bankml runs on the CPU only (no GPUs to split over)"},                        // arg.cpp:2802
	{names: []string{"-ts", "--tensor-split"}, cmds: onBoth, value: "N0,N1,...", check: checkTensorSplit, why: "bankml runs on the CPU only (no GPUs to split over)"},                                                         // arg.cpp:2826
	{names: []string{"-mg", "--main-gpu"}, cmds: onBoth, value: "INDEX", check: checkInt, why: "bankml runs on the CPU only"},                                                                                                 // arg.cpp:2853
	{names: []string{"-fit", "--fit"}, cmds: onBoth, value: "on|off", check: checkOnOff, why: "bankml runs on the CPU only (no device memory to fit)"},                                                                        // arg.cpp:2863
	{names: []string{"-cmoe", "--cpu-moe"}, cmds: onBoth, why: "bankml keeps every tensor on the CPU already"},                                                                                                                // arg.cpp:2755
	{names: []string{"-ncmoe", "--n-cpu-moe"}, cmds: onBoth, value: "N", check: checkInt, why: "bankml keeps every tensor on the CPU already"},                                                                                // arg.cpp:2762
	{names: []string{"-ot", "--override-tensor"}, cmds: onBoth, value: "PATTERN=CPU,...", check: checkOverrideTensor, why: "bankml keeps every tensor on the CPU already"},                                                    // arg.cpp:2749
	{names: []string{"-dt", "--defrag-thold"}, cmds: onBoth, value: "N", why: "deprecated; llama.cpp ignores it too"},                                                                                                         // arg.cpp:2529
	{names: []string{"-lv", "--verbosity", "--log-verbosity"}, cmds: onBoth, value: "N", check: checkInt, why: "bankml has no log levels"},                                                                                    // arg.cpp:3934
	{names: []string{"-co", "--color"}, cmds: onRun, value: "on|off|auto", check: checkColor, why: "bankml prints no colours"},                                                                                                // arg.cpp:1496
	{names: []string{"-no-kvu", "--no-kv-unified"}, cmds: onServe, why: "each bankml slot has its own KV cache, as llama-server's without --kv-unified"},                                                                      // arg.cpp:1720
	{names: []string{"--jinja"}, cmds: onBoth, why: "bankml always renders the GGUF's chat template with its Jinja engine"},                                                                                                   // arg.cpp:3667
	{names: []string{"--metrics"}, cmds: onServe, why: "bankml serve always serves /metrics"},                                                                                                                                 // arg.cpp:3588
	{names: []string{"--simple-io"}, cmds: onRun, why: "bankml reads piped input line by line and a terminal with its own line editor"},                                                                                       // arg.cpp:3816
	{names: []string{"--warmup"}, cmds: onBoth, why: "bankml runs no warm-up decode (it changes no result)"},                                                                                                                  // arg.cpp:1964
	{names: []string{"--no-warmup"}, cmds: onBoth, why: "bankml runs no warm-up decode (it changes no result)"},                                                                                                               // arg.cpp:1964
	{names: []string{"--perf"}, cmds: onBoth, why: "bankml always reports its timings (run on standard error, serve in each answer's timings)"},                                                                               // arg.cpp:1781
	{names: []string{"--no-perf"}, cmds: onBoth, why: "bankml always reports its timings (run on standard error, serve in each answer's timings)"},                                                                            // arg.cpp:1781
	{names: []string{"-v", "--verbose", "--log-verbose"}, cmds: onBoth, why: "bankml has no log levels"},                                                                                                                      // arg.cpp:3920
	{names: []string{"--log-colors"}, cmds: onBoth, value: "on|off|auto", check: checkColor, why: "bankml prints no colours"},                                                                                                 // arg.cpp:3903
	{names: []string{"--log-prefix", "--no-log-prefix"}, cmds: onBoth, why: "bankml's log lines have no prefix to switch"},                                                                                                    // arg.cpp:3950
	{names: []string{"--log-timestamps", "--no-log-timestamps"}, cmds: onBoth, why: "bankml run's lines carry no timestamps; serve's log always does"},                                                                        // arg.cpp:3958
	{names: []string{"--log-disable"}, cmds: onServe, why: "bankml serve always writes its log (start-up, refusals, model loads, shutdown) on standard error"},                                                                // arg.cpp:3869

	// Flags bankml cannot honour.
	{names: []string{"-kvu", "--kv-unified"}, cmds: onBoth, refuse: "not supported by bankml: one KV cache shared by all slots (llama.cpp's unified cache) is not implemented; each bankml serve slot has its own KV cache of -c/-np tokens, as llama-server's --no-kv-unified"}, // arg.cpp:1720
	{names: []string{"--no-jinja"}, cmds: onBoth, refuse: "bankml has no chat template path but Jinja's"}, // arg.cpp:3668
	{names: []string{"-hf", "-hfr", "--hf-repo"}, cmds: onBoth, value: "REPO", refuse: llamaNoDownload},   // arg.cpp:3055
	{names: []string{"-hff", "--hf-file"}, cmds: onBoth, value: "FILE", refuse: llamaNoDownload},          // arg.cpp:3065
	{names: []string{"-hft", "--hf-token"}, cmds: onBoth, value: "TOKEN", refuse: llamaNoDownload},        // arg.cpp:3072
	{names: []string{"-mu", "--model-url"}, cmds: onBoth, value: "URL", refuse: llamaNoDownload},          // arg.cpp:3039
	{names: []string{"-dr", "--docker-repo"}, cmds: onBoth, value: "REPO", refuse: llamaNoDownload},       // arg.cpp:3046
	// llama-perplexity's other scores.
	{names: []string{"--ppl-stride"}, cmds: onPerplexity, value: "N", refuse: "not supported by bankml perplexity: the strided perplexity (llama-perplexity's perplexity_v2) is not implemented"},                 // arg.cpp:2516
	{names: []string{"--ppl-output-type"}, cmds: onPerplexity, value: "0|1", refuse: "not supported by bankml perplexity: it sets the output of the strided perplexity (--ppl-stride), which is not implemented"}, // arg.cpp:2523
	{names: []string{"--kl-divergence"}, cmds: onPerplexity, refuse: "not supported by bankml perplexity: the KL divergence against saved logits is not implemented"},                                             // arg.cpp:2502
	{names: []string{"--kl-divergence-base", "--save-all-logits"}, cmds: onPerplexity, value: "FNAME", refuse: "not supported by bankml perplexity: saving logits for --kl-divergence is not implemented"},        // arg.cpp:2509
	{names: []string{"--hellaswag"}, cmds: onPerplexity, refuse: "not supported by bankml perplexity: the HellaSwag score is not implemented"},                                                                    // arg.cpp:2460
	{names: []string{"--hellaswag-tasks"}, cmds: onPerplexity, value: "N", refuse: "not supported by bankml perplexity: the HellaSwag score is not implemented"},                                                  // arg.cpp:2467
	{names: []string{"--winogrande"}, cmds: onPerplexity, refuse: "not supported by bankml perplexity: the Winogrande score is not implemented"},                                                                  // arg.cpp:2474
	{names: []string{"--winogrande-tasks"}, cmds: onPerplexity, value: "N", refuse: "not supported by bankml perplexity: the Winogrande score is not implemented"},                                                // arg.cpp:2481
	{names: []string{"--multiple-choice"}, cmds: onPerplexity, refuse: "not supported by bankml perplexity: the multiple-choice score is not implemented"},                                                        // arg.cpp:2488
	{names: []string{"--multiple-choice-tasks"}, cmds: onPerplexity, value: "N", refuse: "not supported by bankml perplexity: the multiple-choice score is not implemented"},                                      // arg.cpp:2495
}, samplingFlags())

// llamaSampling lists common/arg.cpp's sampling flags (those it marks set_sampling, arg.cpp:1982–2308):
// every tool takes them, llama-server as the sampling defaults of requests that set none of their own.
// run is bankml run's own flag for a spelling ("" when run has none).
var llamaSampling = []struct {
	names      []string
	value, run string
}{
	{[]string{"--samplers"}, "SAMPLERS", "--samplers"},                         // arg.cpp:1982
	{[]string{"-s", "--seed"}, "SEED", "--seed"},                               // arg.cpp:1991
	{[]string{"--sampler-seq", "--sampling-seq"}, "SEQUENCE", "--sampler-seq"}, // arg.cpp:1998
	{[]string{"--ignore-eos"}, "", "--ignore-eos"},                             // arg.cpp:2005
	{[]string{"--temp", "--temperature"}, "N", "--temp"},                       // arg.cpp:2012
	{[]string{"--top-k"}, "N", "--top-k"},                                      // arg.cpp:2021
	{[]string{"--top-p"}, "N", "--top-p"},                                      // arg.cpp:2029
	{[]string{"--min-p"}, "N", "--min-p"},                                      // arg.cpp:2037
	{[]string{"--top-nsigma", "--top-n-sigma"}, "N", "--top-nsigma"},           // arg.cpp:2045
	{[]string{"--xtc-probability"}, "N", "--xtc-probability"},                  // arg.cpp:2052
	{[]string{"--xtc-threshold"}, "N", "--xtc-threshold"},                      // arg.cpp:2060
	{[]string{"--typical", "--typical-p"}, "N", "--typical"},                   // arg.cpp:2068
	{[]string{"--repeat-last-n"}, "N", "--repeat-last-n"},                      // arg.cpp:2075
	{[]string{"--repeat-penalty"}, "N", "--repeat-penalty"},                    // arg.cpp:2087
	{[]string{"--presence-penalty"}, "N", "--presence-penalty"},                // arg.cpp:2101
	{[]string{"--frequency-penalty"}, "N", "--frequency-penalty"},              // arg.cpp:2112
	{[]string{"--dry-multiplier"}, "N", "--dry-multiplier"},                    // arg.cpp:2123
	{[]string{"--dry-base"}, "N", "--dry-base"},                                // arg.cpp:2130
	{[]string{"--dry-allowed-length"}, "N", "--dry-allowed-length"},            // arg.cpp:2141
	{[]string{"--dry-penalty-last-n"}, "N", "--dry-penalty-last-n"},            // arg.cpp:2148
	{[]string{"--dry-sequence-breaker"}, "STRING", "--dry-sequence-breaker"},   // arg.cpp:2158
	{[]string{"--adaptive-target"}, "N", "--adaptive-target"},                  // arg.cpp:2184
	{[]string{"--adaptive-decay"}, "N", "--adaptive-decay"},                    // arg.cpp:2194
	{[]string{"--dynatemp-range"}, "N", "--dynatemp-range"},                    // arg.cpp:2204
	{[]string{"--dynatemp-exp"}, "N", "--dynatemp-exp"},                        // arg.cpp:2211
	{[]string{"--mirostat"}, "N", "--mirostat"},                                // arg.cpp:2218
	{[]string{"--mirostat-lr"}, "N", "--mirostat-lr"},                          // arg.cpp:2227
	{[]string{"--mirostat-ent"}, "N", "--mirostat-ent"},                        // arg.cpp:2235
	{[]string{"-l", "--logit-bias"}, "TOKEN_ID(+/-)BIAS", "--logit-bias"},      // arg.cpp:2243
	{[]string{"--grammar"}, "GRAMMAR", "--grammar"},                            // arg.cpp:2265
	{[]string{"--grammar-file"}, "FNAME", "--grammar-file"},                    // arg.cpp:2272
	{[]string{"-j", "--json-schema"}, "SCHEMA", "--json-schema"},               // arg.cpp:2279
	{[]string{"-jf", "--json-schema-file"}, "FILE", "--json-schema-file"},      // arg.cpp:2286
	{[]string{"-bs", "--backend-sampling"}, "", ""},                            // arg.cpp:2303
}

// Why the sampling flags are refused: serve has no server-wide defaults; run has all but -bs.
const (
	llamaNoServerSampling = "llama-server's server-wide sampling defaults are not supported by bankml serve: set them per request"
	llamaRunSampling      = "not supported by bankml run: backend sampling is not implemented (every sampler runs on the CPU)"
)

// samplingFlags is llamaSampling as entries of llamaFlags: on run, a spelling of a flag run has is that
// flag and the others are refused (llamaRunSampling); on serve all are refused (llamaNoServerSampling).
func samplingFlags() []llamaFlag {
	var fs []llamaFlag
	for _, f := range llamaSampling {
		run := llamaFlag{names: f.names, cmds: onRun, to: f.run}
		if f.run == "" {
			run = llamaFlag{names: f.names, cmds: onRun, value: f.value, refuse: llamaRunSampling}
		}
		fs = append(fs, run, llamaFlag{names: f.names, cmds: onServe, value: f.value, refuse: llamaNoServerSampling})
	}
	return fs
}

// llamaNoServerStop is why serve refuses -r: llama-server's stop strings for requests that set none.
const llamaNoServerStop = "llama-server's server-wide stop strings are not supported by bankml serve: set \"stop\" per request"

const llamaNoDownload = "llama.cpp's download flags are not taken: pass a local GGUF file as MODEL or -m FNAME, or a store name (bankml pull downloads from the catalog)"

// llamaOther lists arg.cpp's other multi-letter single-dash flags of llama-cli, llama-completion and
// llama-server, with their long names, which bankml does not take: each is a usage error naming it.
var llamaOther = map[string]string{
	"-cl": "--cache-list", "-Cr": "--cpu-range", "-Cb": "--cpu-mask-batch", "-Crb": "--cpu-range-batch",
	"-lcs": "--lookup-cache-static", "-lcd": "--lookup-cache-dynamic", "-ctxcp": "--ctx-checkpoints",
	"-cms": "--checkpoint-min-step", "-sysf": "--system-prompt-file",
	"-bf": "--binary-file", "-ptc": "--print-token-count", "-if": "--interactive-first",
	"-mli": "--multiline-input",
	"-gan": "--grp-attn-n", "-gaw": "--grp-attn-w", "-nr": "--no-repack", "-mm": "--mmproj",
	"-mmu": "--mmproj-url", "-mmdev": "--mmproj-device", "-lzm": "--lazy-mode", "-fitt": "--fit-target",
	"-fitc": "--fit-ctx", "-ag": "--agent", "-no-ag": "--no-agent", "-rea": "--reasoning",
	"-sps": "--slot-prompt-similarity", "-hfd": "--hf-repo-draft", "-hfrd": "--hf-repo-draft",
	"-td": "--threads-draft", "-tbd": "--threads-batch-draft", "-Cd": "--cpu-mask-draft",
	"-Crd": "--cpu-range-draft", "-Cbd": "--cpu-mask-batch-draft", "-ctkd": "--cache-type-k-draft",
	"-ctvd": "--cache-type-v-draft", "-otd": "--override-tensor-draft", "-cmoed": "--cpu-moe-draft",
	"-ncmoed": "--n-cpu-moe-draft", "-devd": "--device-draft", "-ngld": "--gpu-layers-draft",
	"-md": "--model-draft",
}

// llamaAccumulate are the flags whose every value counts when given again: arg.cpp's handler adds to a set
// (-a/--alias, arg.cpp:3007, into model_alias) or a list (--dry-sequence-breaker, arg.cpp:2158; -l/--logit-bias,
// arg.cpp:2243; -r/--reverse-prompt, arg.cpp:1885) though parse_cli_args warns "only last value will be used"
// (arg.cpp:826).
var llamaAccumulate = []string{"-a", "--alias", "--dry-sequence-breaker", "-l", "--logit-bias", "-r", "--reverse-prompt"}

// lookupLlama is the table's entry for a flag's name (any command's), or nil.
func lookupLlama(name, cmd string) *llamaFlag {
	var other *llamaFlag
	for i := range llamaFlags {
		f := &llamaFlags[i]
		if slices.Contains(f.names, name) {
			if slices.Contains(f.cmds, cmd) {
				return f
			}
			other = f
		}
	}
	return other
}

// llamaCommands names the commands whose entries of the table name a flag ("run, serve and embed"), or
// is "" when none does.
func llamaCommands(name string) string {
	var cmds []string
	for _, c := range []string{"run", "serve", "embed", "perplexity"} {
		for _, f := range llamaFlags {
			if slices.Contains(f.names, name) && slices.Contains(f.cmds, c) {
				cmds = append(cmds, c)
				break
			}
		}
	}
	if len(cmds) < 2 {
		return strings.Join(cmds, "")
	}
	return strings.Join(cmds[:len(cmds)-1], ", ") + " and " + cmds[len(cmds)-1]
}

// llamaArgs rewrites the arguments of `bankml run` and `bankml serve` by the table llamaFlags before kong
// parses them (see the file's comment), and, for every command, splits a one-letter flag that takes a value
// written with "=" (-p=Once, -n=4) into the flag and its value, which kong would otherwise read as the
// value "=Once". takesValue reports whether a token is one of kong's flags that takes a value: the token
// after it is that value, whatever it is (-p -ngl prompts the text "-ngl", as in llama.cpp), and is left
// alone. It returns the arguments for kong, the warning lines for stderr (without "bankml: ") in order, and
// a usage error naming the flag for a refused flag, a value arg.cpp refuses, or a value missing at the end.
func llamaArgs(args []string, takesValue func(string) bool) (out, warnings []string, err error) {
	if len(args) == 0 {
		return args, nil, nil
	}
	cmd := args[0]
	llama := cmd == "run" || cmd == "serve"
	out = make([]string, 0, len(args)+2)
	out = append(out, cmd)
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if !isFlagToken(a) {
			out = append(out, a) // MODEL, or what kong makes of it
			continue
		}
		name, value, eq := strings.Cut(a, "=")
		// apply runs f's entry on this flag: its arguments for kong, its warning, and its value when that is
		// the next argument.
		apply := func(f *llamaFlag) error {
			w, o, skip, err := f.apply(cmd, name, value, eq, args[i+1:], out, takesValue)
			if err != nil {
				return err
			}
			out = o
			if w != "" {
				warnings = append(warnings, w)
			}
			if skip {
				i++
			}
			return nil
		}
		if llama {
			if strings.HasPrefix(name, "--") { // arg.cpp reads "_" in a "--" flag as "-"
				name = strings.ReplaceAll(name, "_", "-")
			}
			switch {
			case seen[name] && slices.Contains(llamaAccumulate, name):
				warnings = append(warnings, name+" is given more than once: every one counts, as in llama.cpp (whose warning says only the last does)")
			case seen[name]: // arg.cpp warns when the same spelling is given again; the last one counts
				warnings = append(warnings, name+" is given more than once: the last one counts, as in llama.cpp")
			}
			seen[name] = true
			if f := lookupLlama(name, cmd); f != nil {
				if err := apply(f); err != nil {
					return nil, nil, err
				}
				continue
			}
			if !strings.HasPrefix(name, "--") && len(name) > 2 {
				if long, ok := llamaOther[name]; ok {
					return nil, nil, fmt.Errorf("%s: llama.cpp's %s (%s) is not supported by bankml %s", cmd, name, long, cmd)
				}
				return nil, nil, fmt.Errorf("%s: unknown flag %s: bankml's single-dash flags are one letter, or llama.cpp's that --help lists", cmd, name)
			}
		} else if f := lookupLlama(name, cmd); f != nil && slices.Contains(f.cmds, cmd) {
			// An entry of the table for this command (embed's -ub and -f): what it says, and nothing else of
			// arg.cpp's handling above.
			if err := apply(f); err != nil {
				return nil, nil, err
			}
			continue
		} else if !strings.HasPrefix(name, "--") && len(name) > 2 {
			// The other commands take one-letter single-dash flags only: kong would read a llama.cpp flag
			// such as -ctk as -c with the value "tk".
			if cmds := llamaCommands(name); cmds != "" {
				return nil, nil, fmt.Errorf("%s: unknown flag %s: llama.cpp's %s is taken by bankml %s, not by bankml %s", cmd, name, name, cmds, cmd)
			}
			return nil, nil, fmt.Errorf("%s: unknown flag %s: bankml's single-dash flags are one letter", cmd, name)
		}
		switch {
		case eq && len(name) == 2 && name[1] != '-' && takesValue(name):
			out = append(out, name, value) // kong would read -p=x as -p with the value "=x"
		case eq:
			out = append(out, name+"="+value)
		default:
			out = append(out, name)
			if takesValue(name) {
				if i+1 == len(args) {
					return nil, nil, fmt.Errorf("%s: %s: expected a value", cmd, name)
				}
				out = append(out, args[i+1])
				i++
			}
		}
	}
	if llama {
		if err := checkFlashAttnV(cmd, args, out); err != nil {
			return nil, nil, err
		}
	}
	return out, warnings, nil
}

// checkFlashAttnV refuses -fa off beside a quantized V cache type, as llama_init_from_model does
// (src/llama-context.cpp: "quantized V cache requires flash_attn to be enabled"); bankml ignores -fa otherwise.
// The last -fa and the last --cache-type-v count.
func checkFlashAttnV(cmd string, args, out []string) error {
	last := func(list []string, names ...string) string {
		v := ""
		for i := 1; i < len(list); i++ {
			if list[i] == "--" {
				break
			}
			name, value, eq := strings.Cut(list[i], "=")
			if strings.HasPrefix(name, "--") {
				name = strings.ReplaceAll(name, "_", "-")
			}
			if slices.Contains(names, name) {
				if !eq && i+1 < len(list) {
					value = list[i+1]
				}
				v = value
			}
		}
		return v
	}
	fa := last(args, "-fa", "--flash-attn")
	ctv := last(out, "--cache-type-v")
	if slices.Contains(llamaFalsey, fa) && ctv != "" && ctv != "f16" && ctv != "f32" && ctv != "bf16" {
		return fmt.Errorf("%s: -ctv %s with -fa %s: quantized V cache requires flash_attn to be enabled (llama.cpp refuses the context too)", cmd, ctv, fa)
	}
	return nil
}

// isFlagToken reports whether an argument that is not a value is a flag: "-" and a letter, or "--" and a
// name ("-1" and "-" are not).
func isFlagToken(a string) bool {
	if strings.HasPrefix(a, "--") {
		return len(a) > 2
	}
	return len(a) > 1 && a[0] == '-' && (a[1] >= 'a' && a[1] <= 'z' || a[1] >= 'A' && a[1] <= 'Z')
}

// apply does what the table says for the flag f given as name (=value when eq; rest are the arguments
// after it): it appends bankml's spelling to out, or checks an ignored flag's value and returns its warning
// line, or refuses. skip reports whether it took the next argument as the value.
func (f *llamaFlag) apply(cmd, name, value string, eq bool, rest, out []string, takesValue func(string) bool) (warning string, _ []string, skip bool, err error) {
	if !slices.Contains(f.cmds, cmd) {
		return "", nil, false, fmt.Errorf("%s: %s is a flag of bankml %s only", cmd, name, llamaCommands(name))
	}
	if f.refuse != "" {
		return "", nil, false, fmt.Errorf("%s: %s: %s", cmd, name, f.refuse)
	}
	if f.file {
		v := value
		if !eq {
			if len(rest) == 0 {
				return "", nil, false, fmt.Errorf("%s: %s: expected a value (%s)", cmd, name, f.value)
			}
			v, skip = rest[0], true
		}
		text, err := readPromptFile(v)
		if err != nil {
			return "", nil, false, fmt.Errorf("%s: %s: %w", cmd, name, err)
		}
		return "", append(out, f.to+"="+text), skip, nil
	}
	if f.to != "" {
		if eq {
			return "", append(out, f.to+"="+value), false, nil
		}
		out = append(out, f.to)
		if takesValue(f.to) {
			if len(rest) == 0 {
				return "", nil, false, fmt.Errorf("%s: %s: expected a value", cmd, name)
			}
			return "", append(out, rest[0]), true, nil
		}
		return "", out, false, nil
	}
	shown := f.names[0]
	if f.value == "" {
		if eq {
			return "", nil, false, fmt.Errorf("%s: %s takes no value", cmd, name)
		}
		return shown + " ignored: " + f.why, out, false, nil
	}
	v := value
	if !eq {
		if len(rest) == 0 {
			return "", nil, false, fmt.Errorf("%s: %s: expected a value (%s)", cmd, name, f.value)
		}
		v, skip = rest[0], true
	}
	note := ""
	if f.check != nil {
		if note, err = f.check(v); err != nil {
			hint := ""
			if !eq && isFlagToken(v) {
				hint = fmt.Sprintf(" (%s takes the next argument as its value: give one before %s)", name, v)
			}
			if errors.Is(err, errInt32) {
				return "", nil, false, fmt.Errorf("%s: %w%s", cmd, int32Range(strings.Join(f.names, "/"), v), hint)
			}
			return "", nil, false, fmt.Errorf("%s: %s %q: %w%s", cmd, strings.Join(f.names, "/"), v, err, hint)
		}
	}
	return fmt.Sprintf("%s %s ignored: %s%s", shown, v, f.why, note), out, skip, nil
}

// readPromptFile is the text of -f/--file FNAME as arg.cpp's handler takes it (arg.cpp:1797, read_file at
// arg.cpp:67): the file's bytes as they are, less one trailing "\n" (a "\r" before it stays). It sets the
// prompt as -p does, so the last of -p and -f counts and -e's escapes apply to it (common_params_parse,
// arg.cpp:918). Errors: the file cannot be read (llama.cpp: "failed to open file").
func readPromptFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("failed to read the prompt file: %w", err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// The value checks of the ignored flags, as arg.cpp's handlers make them.

var errNotInt = errors.New("must be an integer")

// checkInt takes what arg.cpp's std::stoi takes, a decimal integer of a 32-bit int (stoi throws
// out_of_range past it), but whole: "12abc", which stoi reads as 12, is refused (the deliberate difference
// the file's comment states).
func checkInt(v string) (string, error) {
	if _, err := strconv.ParseInt(v, 10, 32); err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return "", errInt32
		}
		return "", errNotInt
	}
	return "", nil
}

// errInt32 is checkInt's out-of-range refusal, for a flag kong has read into an int.
var errInt32 = fmt.Errorf("out of range: llama.cpp takes a 32-bit int, in [%d, %d]", math.MinInt32, math.MaxInt32)

// checkInt32 refuses an int flag's value outside a 32-bit int, as arg.cpp's std::stoi refuses it
// (out_of_range), in outOfRange's words (wrapping errInt32).
func checkInt32(flag string, v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return int32Range(flag, v)
	}
	return nil
}

// int32Range is outOfRange's error for a value outside a 32-bit int; it wraps errInt32.
func int32Range(flag string, v any) error {
	e := outOfRange(flag, v, math.MinInt32, math.MaxInt32, "llama.cpp takes a 32-bit int").(*rangeError)
	e.err = errInt32
	return e
}

func checkGPULayers(v string) (string, error) { // arg.cpp:2784
	if v == "auto" || v == "all" {
		return "", nil
	}
	if _, err := checkInt(v); err != nil {
		if errors.Is(err, errNotInt) {
			return "", errors.New("must be a number, auto or all")
		}
		return "", err
	}
	return "", nil
}

// The spellings of common/arg.cpp's is_truthy, is_falsey and is_autoy.
var (
	llamaTruthy = []string{"on", "enabled", "true", "1"}
	llamaFalsey = []string{"off", "disabled", "false", "0"}
	llamaAutoy  = []string{"auto", "-1"}
)

func checkFlashAttn(v string) (string, error) { // arg.cpp:1751
	switch {
	case slices.Contains(llamaTruthy, v), slices.Contains(llamaAutoy, v):
		return "", nil
	case slices.Contains(llamaFalsey, v):
		return "; llama.cpp with -fa off takes another attention path whose results may differ in the last bits from bankml's", nil
	}
	return "", errors.New("must be on, off or auto")
}

func checkColor(v string) (string, error) { // arg.cpp:1496
	if slices.Contains(llamaTruthy, v) || slices.Contains(llamaFalsey, v) || slices.Contains(llamaAutoy, v) {
		return "", nil
	}
	return "", errors.New("must be on, off or auto")
}

func checkOnOff(v string) (string, error) { // arg.cpp:2863
	if slices.Contains(llamaTruthy, v) || slices.Contains(llamaFalsey, v) {
		return "", nil
	}
	return "", errors.New("must be on or off")
}

func oneOf(values ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		if !slices.Contains(values, v) {
			return "", fmt.Errorf("must be one of %s", strings.Join(values, ", "))
		}
		return "", nil
	}
}

func checkDevice(v string) (string, error) { // parse_device_list, arg.cpp:1116
	if v != "none" {
		return "", errors.New("invalid device: bankml has no device but the CPU, which llama.cpp does not list either (only none)")
	}
	return "", nil
}

var splitSeparators = regexp.MustCompile(`[,/]+`)

func checkTensorSplit(v string) (string, error) { // arg.cpp:2826
	parts := splitSeparators.Split(v, -1)
	if len(parts) >= 16 { // llama_max_devices
		return "", fmt.Errorf("got %d input configs, but llama.cpp has at most 16 devices", len(parts))
	}
	for _, p := range parts {
		if _, err := strconv.ParseFloat(p, 32); err != nil {
			return "", fmt.Errorf("%q is not a number", p)
		}
	}
	return "", nil
}

func checkOverrideTensor(v string) (string, error) { // parse_tensor_buffer_overrides, arg.cpp:252
	for _, o := range strings.Split(v, ",") {
		_, buft, ok := strings.Cut(o, "=")
		if !ok {
			return "", errors.New("invalid value: each override is PATTERN=BUFFER_TYPE")
		}
		if buft != "CPU" {
			return "", fmt.Errorf("unknown buffer type %q: the CPU's is CPU", buft)
		}
	}
	return "", nil
}

// llamaIgnored carries the warning lines llamaArgs wrote for a command (set after parsing, in main's
// run): the command prints them when it runs (warn), after kong's validation.
type llamaIgnored struct {
	lines []string
}

// warn writes each warning line to w as "bankml: LINE", then one for each LLAMA_ARG_* variable set in the
// environment (llamaEnvWarnings).
func (l *llamaIgnored) warn(_ string, w io.Writer) error {
	for _, s := range slices.Concat(l.lines, llamaEnvWarnings(os.Environ())) {
		if _, err := fmt.Fprintln(w, "bankml: "+s); err != nil {
			return err
		}
	}
	return nil
}

// llamaHelp is the part of a command's --help that lists the llama.cpp flags it takes by the table.
func llamaHelp(cmd string) string {
	var mapped, ignored, refused []string
	for _, f := range llamaFlags {
		if !slices.Contains(f.cmds, cmd) {
			continue
		}
		spell := strings.Join(slices.DeleteFunc(slices.Clone(f.names), func(n string) bool { return n == f.to }), "/")
		if spell == "" {
			continue // a spelling of the command's own flag
		}
		if f.value != "" {
			spell += " " + f.value
		}
		switch {
		case f.file:
			mapped = append(mapped, spell+" = "+f.to+" with the file's text (one trailing newline dropped)")
		case f.to != "":
			mapped = append(mapped, spell+" = "+f.to)
		case f.refuse != "":
			refused = append(refused, spell)
		default:
			ignored = append(ignored, spell)
		}
	}
	var parts []string
	if len(mapped) > 0 {
		parts = append(parts, "llama.cpp's flags (common/arg.cpp) are taken too: "+strings.Join(mapped, ", ")+".")
	}
	if len(ignored) > 0 {
		parts = append(parts, "Accepted and ignored with a warning line each, their values checked as llama.cpp checks them (numbers whole, in a 32-bit int): "+strings.Join(ignored, ", ")+".")
	}
	if len(refused) > 0 {
		parts = append(parts, "Refused with the reason: "+strings.Join(refused, ", ")+".")
	}
	if slices.Contains(onBoth, cmd) {
		parts = append(parts, "A flag given twice warns and the last one counts; \"_\" in a --flag reads as \"-\" (--ctx_size), as in llama.cpp.")
	}
	return strings.Join(parts, " ")
}

// Help implements kong.HelpProvider: the llama.cpp flags run takes.
func (r *runCmd) Help() string { return llamaHelp("run") }

// Help implements kong.HelpProvider: the llama.cpp flags serve takes.
func (c *serveCmd) Help() string { return llamaHelp("serve") }

// Help implements kong.HelpProvider: the llama.cpp flags embed takes by the table.
func (c *embedCmd) Help() string { return llamaHelp("embed") }

// Help implements kong.HelpProvider: llama-perplexity's flags perplexity refuses by the table.
func (p *perplexityCmd) Help() string { return llamaHelp("perplexity") }

// valueFlags returns takesValue for llamaArgs from the parser's model: the spellings (--name, aliases, -s)
// of the flags of command cmd and of the application that take a value (not booleans or counters).
func valueFlags(app *kong.Application, cmd string) func(string) bool {
	set := map[string]bool{}
	add := func(flags []*kong.Flag) {
		for _, f := range flags {
			if f.IsBool() || f.IsCounter() {
				continue
			}
			set["--"+f.Name] = true
			for _, a := range f.Aliases {
				set["--"+a] = true
			}
			if f.Short != 0 {
				set["-"+string(f.Short)] = true
			}
		}
	}
	add(app.Flags)
	for _, c := range app.Children {
		if c.Name == cmd {
			add(c.Flags)
		}
	}
	return func(tok string) bool { return set[tok] }
}

// resolveModel is the model's path from a command's positional MODEL and llama.cpp's -m/--model FNAME
// (kong has made both absolute): one of them, or MODEL when both name the same file (the same path, or
// paths os.SameFile finds to be one file: a/../a/x.gguf, a symlink, a hard link). Neither, two different
// files (or a path that cannot be stat'ed beside another), or a directory is a usage error naming them (a
// missing file given once is left to the command's I/O error).
func resolveModel(positional, flag string) (string, error) {
	path, label := positional, "MODEL"
	switch {
	case positional == "" && flag == "":
		return "", errors.New(`expected "<MODEL>" or -m/--model FNAME: the GGUF file to load`)
	case positional != "" && flag != "" && positional != flag && !sameFile(positional, flag):
		return "", fmt.Errorf("the model is given twice, as MODEL %q and as -m/--model %q: give one", positional, flag)
	case positional == "":
		path, label = flag, "-m/--model"
	}
	if err := notDirectory(label, path); err != nil {
		return "", err
	}
	return path, nil
}

// sameFile reports whether paths a and b both exist and are one file (os.SameFile).
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
