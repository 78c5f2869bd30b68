package main

import (
	"slices"
	"strings"
)

// llamaEnv maps the environment variables llama.cpp's common/arg.cpp reads (set_env, read by
// get_value_from_env at arg.cpp:125; LLAMA_ARG_NO_* for a flag's negative spellings) to the flags they stand
// for, with the line of the flag in arg.cpp: llama.cpp takes a flag's value from its variable when the flag
// is not given. bankml reads none of them (llamaEnvWarnings says so). Taken from the reference's
// common/arg.cpp, its set_env calls.
var llamaEnv = map[string]string{
	"LLAMA_ARG_AGENT":                          "-ag/--agent",                                                         // arg.cpp:3449
	"LLAMA_ARG_ALIAS":                          "-a/--alias",                                                          // arg.cpp:3007
	"LLAMA_ARG_API_KEY_FILE":                   "--api-key-file",                                                      // arg.cpp:3499
	"LLAMA_ARG_API_PREFIX":                     "--api-prefix",                                                        // arg.cpp:3383
	"LLAMA_ARG_BACKEND_SAMPLING":               "-bs/--backend-sampling",                                              // arg.cpp:2303
	"LLAMA_ARG_BATCH":                          "-b/--batch-size",                                                     // arg.cpp:1666
	"LLAMA_ARG_CACHE_IDLE_SLOTS":               "--cache-idle-slots",                                                  // arg.cpp:1729
	"LLAMA_ARG_CACHE_PROMPT":                   "--cache-prompt",                                                      // arg.cpp:3570
	"LLAMA_ARG_CACHE_RAM":                      "-cram/--cache-ram",                                                   // arg.cpp:1713
	"LLAMA_ARG_CACHE_REUSE":                    "--cache-reuse",                                                       // arg.cpp:3578
	"LLAMA_ARG_CACHE_TYPE_K":                   "-ctk/--cache-type-k",                                                 // arg.cpp:2434
	"LLAMA_ARG_CACHE_TYPE_V":                   "-ctv/--cache-type-v",                                                 // arg.cpp:2447
	"LLAMA_ARG_CHAT_TEMPLATE":                  "--chat-template",                                                     // arg.cpp:3746
	"LLAMA_ARG_CHAT_TEMPLATE_FILE":             "--chat-template-file",                                                // arg.cpp:3758
	"LLAMA_ARG_CHAT_TEMPLATE_KWARGS":           "--chat-template-kwargs",                                              // arg.cpp:3530
	"LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT":      "-cms/--checkpoint-min-step",                                          // arg.cpp:1703
	"LLAMA_ARG_CONTEXT_SHIFT":                  "--context-shift",                                                     // arg.cpp:1737
	"LLAMA_ARG_CONT_BATCHING":                  "-cb/--cont-batching",                                                 // arg.cpp:2567
	"LLAMA_ARG_CORS_CREDENTIALS":               "--cors-credentials",                                                  // arg.cpp:3372
	"LLAMA_ARG_CORS_HEADERS":                   "--cors-headers",                                                      // arg.cpp:3365
	"LLAMA_ARG_CORS_METHODS":                   "--cors-methods",                                                      // arg.cpp:3358
	"LLAMA_ARG_CORS_ORIGINS":                   "--cors-origins",                                                      // arg.cpp:3347
	"LLAMA_ARG_CPU_MOE":                        "-cmoe/--cpu-moe",                                                     // arg.cpp:2756
	"LLAMA_ARG_CTX_CHECKPOINTS":                "-ctxcp/--ctx-checkpoints/--swa-checkpoints",                          // arg.cpp:1695
	"LLAMA_ARG_CTX_SIZE":                       "-c/--ctx-size",                                                       // arg.cpp:1636
	"LLAMA_ARG_DEFRAG_THOLD":                   "-dt/--defrag-thold",                                                  // arg.cpp:2530
	"LLAMA_ARG_DEVICE":                         "-dev/--device",                                                       // arg.cpp:2734
	"LLAMA_ARG_DOCKER_REPO":                    "-dr/--docker-repo",                                                   // arg.cpp:3047
	"LLAMA_ARG_DRAFT_MAX":                      "--draft/--draft-n/--draft-max",                                       // arg.cpp:4383
	"LLAMA_ARG_DRAFT_MIN":                      "--draft-min/--draft-n-min",                                           // arg.cpp:4390
	"LLAMA_ARG_EMBEDDINGS":                     "--embedding/--embeddings",                                            // arg.cpp:3473
	"LLAMA_ARG_ENDPOINT_METRICS":               "--metrics",                                                           // arg.cpp:3588
	"LLAMA_ARG_ENDPOINT_PROPS":                 "--props",                                                             // arg.cpp:3595
	"LLAMA_ARG_ENDPOINT_SLOTS":                 "--slots",                                                             // arg.cpp:3602
	"LLAMA_ARG_FIT":                            "-fit/--fit",                                                          // arg.cpp:2864
	"LLAMA_ARG_FIT_CTX":                        "-fitc/--fit-ctx",                                                     // arg.cpp:2917
	"LLAMA_ARG_FIT_ESTIMATE":                   "-fitp/--fit-print",                                                   // arg.cpp:2878
	"LLAMA_ARG_FIT_TARGET":                     "-fitt/--fit-target",                                                  // arg.cpp:2892
	"LLAMA_ARG_FLASH_ATTN":                     "-fa/--flash-attn",                                                    // arg.cpp:1752
	"LLAMA_ARG_FREQUENCY_PENALTY":              "--frequency-penalty",                                                 // arg.cpp:2112
	"LLAMA_ARG_GRP_ATTN_N":                     "-gan/--grp-attn-n",                                                   // arg.cpp:2397
	"LLAMA_ARG_GRP_ATTN_W":                     "-gaw/--grp-attn-w",                                                   // arg.cpp:2404
	"LLAMA_ARG_HF_FILE":                        "-hff/--hf-file",                                                      // arg.cpp:3066
	"LLAMA_ARG_HF_REPO":                        "-hf/-hfr/--hf-repo",                                                  // arg.cpp:3056
	"LLAMA_ARG_HOST":                           "--host",                                                              // arg.cpp:3310
	"LLAMA_ARG_IMAGE_MAX_TOKENS":               "--image-max-tokens",                                                  // arg.cpp:2642
	"LLAMA_ARG_IMAGE_MIN_TOKENS":               "--image-min-tokens",                                                  // arg.cpp:2635
	"LLAMA_ARG_JINJA":                          "--jinja",                                                             // arg.cpp:3667
	"LLAMA_ARG_KV_OFFLOAD":                     "-kvo/--kv-offload",                                                   // arg.cpp:2411
	"LLAMA_ARG_KV_UNIFIED":                     "-kvu/--kv-unified",                                                   // arg.cpp:1721
	"LLAMA_ARG_KV_UNIFIED_PER_SLOT":            "--kv-unified-per-slot",                                               // arg.cpp:1647
	"LLAMA_ARG_LAZY_MODE":                      "-lzm/--lazy-mode",                                                    // arg.cpp:2706
	"LLAMA_ARG_LOAD_MODE":                      "-lm/--load-mode",                                                     // arg.cpp:2687
	"LLAMA_ARG_LOG_COLORS":                     "--log-colors",                                                        // arg.cpp:3903
	"LLAMA_ARG_LOG_FILE":                       "--log-file",                                                          // arg.cpp:3876
	"LLAMA_ARG_LOG_JSONL":                      "--log-jsonl",                                                         // arg.cpp:3883
	"LLAMA_ARG_LOG_PREFIX":                     "--log-prefix",                                                        // arg.cpp:3950
	"LLAMA_ARG_LOG_TIMESTAMPS":                 "--log-timestamps",                                                    // arg.cpp:3958
	"LLAMA_ARG_LOG_VERBOSITY":                  "-lv/--verbosity/--log-verbosity",                                     // arg.cpp:3935
	"LLAMA_ARG_MAIN_GPU":                       "-mg/--main-gpu",                                                      // arg.cpp:2854
	"LLAMA_ARG_MCP_SERVERS_CONFIG":             "--mcp-servers-config",                                                // arg.cpp:3433
	"LLAMA_ARG_MCP_SERVERS_JSON":               "--mcp-servers-json",                                                  // arg.cpp:3441
	"LLAMA_ARG_MIN_P":                          "--min-p",                                                             // arg.cpp:2037
	"LLAMA_ARG_MMPROJ":                         "-mm/--mmproj",                                                        // arg.cpp:2575
	"LLAMA_ARG_MMPROJ_AUTO":                    "--mmproj-auto",                                                       // arg.cpp:2590
	"LLAMA_ARG_MMPROJ_OFFLOAD":                 "--mmproj-offload",                                                    // arg.cpp:2598
	"LLAMA_ARG_MMPROJ_URL":                     "-mmu/--mmproj-url",                                                   // arg.cpp:2583
	"LLAMA_ARG_MODEL":                          "-m/--model",                                                          // arg.cpp:3031
	"LLAMA_ARG_MODELS_AUTOLOAD":                "--models-autoload",                                                   // arg.cpp:3659
	"LLAMA_ARG_MODELS_DIR":                     "--models-dir",                                                        // arg.cpp:3638
	"LLAMA_ARG_MODELS_MAX":                     "--models-max",                                                        // arg.cpp:3652
	"LLAMA_ARG_MODELS_PRESET":                  "--models-preset",                                                     // arg.cpp:3645
	"LLAMA_ARG_MODEL_URL":                      "-mu/--model-url",                                                     // arg.cpp:3040
	"LLAMA_ARG_MTMD_BATCH_MAX_TOKENS":          "--mtmd-batch-max-tokens",                                             // arg.cpp:2649
	"LLAMA_ARG_NO_AGENT":                       "-no-ag/--no-agent",                                                   // arg.cpp:3449
	"LLAMA_ARG_NO_CACHE_IDLE_SLOTS":            "--no-cache-idle-slots",                                               // arg.cpp:1729
	"LLAMA_ARG_NO_CACHE_PROMPT":                "--no-cache-prompt",                                                   // arg.cpp:3570
	"LLAMA_ARG_NO_CONTEXT_SHIFT":               "--no-context-shift",                                                  // arg.cpp:1737
	"LLAMA_ARG_NO_CONT_BATCHING":               "-nocb/--no-cont-batching",                                            // arg.cpp:2567
	"LLAMA_ARG_NO_CORS_CREDENTIALS":            "--no-cors-credentials",                                               // arg.cpp:3372
	"LLAMA_ARG_NO_ENDPOINT_SLOTS":              "--no-slots",                                                          // arg.cpp:3602
	"LLAMA_ARG_NO_HOST":                        "--no-host",                                                           // arg.cpp:2427
	"LLAMA_ARG_NO_JINJA":                       "--no-jinja",                                                          // arg.cpp:3667
	"LLAMA_ARG_NO_KV_OFFLOAD":                  "-nkvo/--no-kv-offload",                                               // arg.cpp:2411
	"LLAMA_ARG_NO_KV_UNIFIED":                  "-no-kvu/--no-kv-unified",                                             // arg.cpp:1721
	"LLAMA_ARG_NO_LOG_JSONL":                   "--no-log-jsonl",                                                      // arg.cpp:3883
	"LLAMA_ARG_NO_LOG_PREFIX":                  "--no-log-prefix",                                                     // arg.cpp:3950
	"LLAMA_ARG_NO_LOG_TIMESTAMPS":              "--no-log-timestamps",                                                 // arg.cpp:3958
	"LLAMA_ARG_NO_MMPROJ_AUTO":                 "--no-mmproj/--no-mmproj-auto",                                        // arg.cpp:2590
	"LLAMA_ARG_NO_MMPROJ_OFFLOAD":              "--no-mmproj-offload",                                                 // arg.cpp:2598
	"LLAMA_ARG_NO_MODELS_AUTOLOAD":             "--no-models-autoload",                                                // arg.cpp:3659
	"LLAMA_ARG_NO_PERF":                        "--no-perf",                                                           // arg.cpp:1781
	"LLAMA_ARG_NO_PREFILL_ASSISTANT":           "--no-prefill-assistant",                                              // arg.cpp:3781
	"LLAMA_ARG_NO_REASONING_PRESERVE":          "--no-reasoning-preserve",                                             // arg.cpp:3731
	"LLAMA_ARG_NO_REPACK":                      "-nr/--no-repack",                                                     // arg.cpp:2419
	"LLAMA_ARG_NO_SHOW_TIMINGS":                "--no-show-timings",                                                   // arg.cpp:1790
	"LLAMA_ARG_NO_SKIP_CHAT_PARSING":           "--no-skip-chat-parsing",                                              // arg.cpp:3770
	"LLAMA_ARG_NO_SPEC_DRAFT_BACKEND_SAMPLING": "--no-spec-draft-backend-sampling",                                    // arg.cpp:4200
	"LLAMA_ARG_NO_UI":                          "--no-ui/--no-webui",                                                  // arg.cpp:3465
	"LLAMA_ARG_NO_UI_MCP_PROXY":                "--no-ui-mcp-proxy/--no-webui-mcp-proxy",                              // arg.cpp:3404
	"LLAMA_ARG_NUMA":                           "--numa",                                                              // arg.cpp:2719
	"LLAMA_ARG_N_CPU_FFN":                      "-ncffn/--n-cpu-ffn",                                                  // arg.cpp:2773
	"LLAMA_ARG_N_CPU_MOE":                      "-ncmoe/--n-cpu-moe",                                                  // arg.cpp:2763
	"LLAMA_ARG_N_GPU_LAYERS":                   "-ngl/--gpu-layers/--n-gpu-layers",                                    // arg.cpp:2785
	"LLAMA_ARG_N_GPU_LAYERS_DRAFT":             "--spec-draft-ngl/-ngld/--gpu-layers-draft/--n-gpu-layers-draft",      // arg.cpp:4218
	"LLAMA_ARG_N_PARALLEL":                     "-np/--parallel",                                                      // arg.cpp:2541
	"LLAMA_ARG_N_PREDICT":                      "-n/--predict/--n-predict",                                            // arg.cpp:1655
	"LLAMA_ARG_OFFLINE":                        "--offline",                                                           // arg.cpp:3928
	"LLAMA_ARG_OVERRIDE_TENSOR":                "-ot/--override-tensor",                                               // arg.cpp:2750
	"LLAMA_ARG_PERF":                           "--perf",                                                              // arg.cpp:1781
	"LLAMA_ARG_POOLING":                        "--pooling",                                                           // arg.cpp:2310
	"LLAMA_ARG_PORT":                           "--port",                                                              // arg.cpp:3326
	"LLAMA_ARG_PREFILL_ASSISTANT":              "--prefill-assistant",                                                 // arg.cpp:3781
	"LLAMA_ARG_PRESENCE_PENALTY":               "--presence-penalty",                                                  // arg.cpp:2101
	"LLAMA_ARG_REASONING":                      "-rea/--reasoning",                                                    // arg.cpp:3686
	"LLAMA_ARG_REASONING_EFFORT":               "--reasoning-effort",                                                  // arg.cpp:3704
	"LLAMA_ARG_REASONING_PRESERVE":             "--reasoning-preserve",                                                // arg.cpp:3731
	"LLAMA_ARG_REPACK":                         "--repack",                                                            // arg.cpp:2419
	"LLAMA_ARG_REPEAT_PENALTY":                 "--repeat-penalty",                                                    // arg.cpp:2087
	"LLAMA_ARG_RERANKING":                      "--rerank/--reranking",                                                // arg.cpp:3480
	"LLAMA_ARG_REUSE_PORT":                     "--reuse-port",                                                        // arg.cpp:3333
	"LLAMA_ARG_ROPE_FREQ_BASE":                 "--rope-freq-base",                                                    // arg.cpp:2348
	"LLAMA_ARG_ROPE_FREQ_SCALE":                "--rope-freq-scale",                                                   // arg.cpp:2355
	"LLAMA_ARG_ROPE_SCALE":                     "--rope-scale",                                                        // arg.cpp:2341
	"LLAMA_ARG_ROPE_SCALING_TYPE":              "--rope-scaling",                                                      // arg.cpp:2331
	"LLAMA_ARG_RPC":                            "--rpc",                                                               // arg.cpp:2678
	"LLAMA_ARG_SHOW_TIMINGS":                   "--show-timings",                                                      // arg.cpp:1790
	"LLAMA_ARG_SKIP_CHAT_PARSING":              "--skip-chat-parsing",                                                 // arg.cpp:3770
	"LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING":    "--spec-draft-backend-sampling",                                       // arg.cpp:4200
	"LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K":        "--spec-draft-type-k/-ctkd/--cache-type-k-draft",                      // arg.cpp:4086
	"LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V":        "--spec-draft-type-v/-ctvd/--cache-type-v-draft",                      // arg.cpp:4099
	"LLAMA_ARG_SPEC_DRAFT_CPU_MOE":             "--spec-draft-cpu-moe/-cmoed/--cpu-moe-draft",                         // arg.cpp:4118
	"LLAMA_ARG_SPEC_DRAFT_HF_REPO":             "--spec-draft-hf/-hfd/-hfrd/--hf-repo-draft",                          // arg.cpp:3971
	"LLAMA_ARG_SPEC_DRAFT_MODEL":               "--spec-draft-model/-md/--model-draft",                                // arg.cpp:4237
	"LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE":           "--spec-draft-n-cpu-moe/--spec-draft-ncmoe/-ncmoed/--n-cpu-moe-draft", // arg.cpp:4125
	"LLAMA_ARG_SPEC_DRAFT_N_MAX":               "--spec-draft-n-max",                                                  // arg.cpp:4136
	"LLAMA_ARG_SPEC_DRAFT_N_MIN":               "--spec-draft-n-min",                                                  // arg.cpp:4146
	"LLAMA_ARG_SPEC_DRAFT_P_MIN":               "--spec-draft-p-min/--draft-p-min",                                    // arg.cpp:4193
	"LLAMA_ARG_SPEC_DRAFT_P_SPLIT":             "--spec-draft-p-split/--draft-p-split",                                // arg.cpp:4186
	"LLAMA_ARG_SPEC_SYNTH_LEN":                 "--spec-synth-len",                                                    // arg.cpp:4153
	"LLAMA_ARG_SPEC_SYNTH_RATES":               "--spec-synth-rates",                                                  // arg.cpp:4166
	"LLAMA_ARG_SPEC_TYPE":                      "--spec-type",                                                         // arg.cpp:4245
	"LLAMA_ARG_SPLIT_MODE":                     "-sm/--split-mode",                                                    // arg.cpp:2803
	"LLAMA_ARG_SSE_PING_INTERVAL":              "--sse-ping-interval",                                                 // arg.cpp:3556
	"LLAMA_ARG_SSL_CERT_FILE":                  "--ssl-cert-file",                                                     // arg.cpp:3523
	"LLAMA_ARG_SSL_KEY_FILE":                   "--ssl-key-file",                                                      // arg.cpp:3516
	"LLAMA_ARG_STATIC_PATH":                    "--path",                                                              // arg.cpp:3340
	"LLAMA_ARG_SWA_FULL":                       "--swa-full",                                                          // arg.cpp:1687
	"LLAMA_ARG_TAGS":                           "--tags",                                                              // arg.cpp:3019
	"LLAMA_ARG_TEMPERATURE":                    "--temp/--temperature",                                                // arg.cpp:2012
	"LLAMA_ARG_TENSOR_SPLIT":                   "-ts/--tensor-split",                                                  // arg.cpp:2827
	"LLAMA_ARG_THINK":                          "--reasoning-format",                                                  // arg.cpp:3675
	"LLAMA_ARG_THINK_BUDGET":                   "--reasoning-budget",                                                  // arg.cpp:3716
	"LLAMA_ARG_THINK_BUDGET_MESSAGE":           "--reasoning-budget-message",                                          // arg.cpp:3724
	"LLAMA_ARG_THREADS":                        "-t/--threads",                                                        // arg.cpp:1514
	"LLAMA_ARG_THREADS_HTTP":                   "--threads-http",                                                      // arg.cpp:3563
	"LLAMA_ARG_TIMEOUT":                        "-to/--timeout",                                                       // arg.cpp:3548
	"LLAMA_ARG_TOOLS":                          "--tools",                                                             // arg.cpp:3412
	"LLAMA_ARG_TOOLS_RUNTIME":                  "--tools-runtime",                                                     // arg.cpp:3422
	"LLAMA_ARG_TOP_K":                          "--top-k",                                                             // arg.cpp:2021
	"LLAMA_ARG_TOP_P":                          "--top-p",                                                             // arg.cpp:2029
	"LLAMA_ARG_UBATCH":                         "-ub/--ubatch-size",                                                   // arg.cpp:1673
	"LLAMA_ARG_UI":                             "--ui/--webui",                                                        // arg.cpp:3465
	"LLAMA_ARG_UI_CONFIG":                      "--ui-config/--webui-config",                                          // arg.cpp:3390
	"LLAMA_ARG_UI_CONFIG_FILE":                 "--ui-config-file/--webui-config-file",                                // arg.cpp:3397
	"LLAMA_ARG_UI_MCP_PROXY":                   "--ui-mcp-proxy/--webui-mcp-proxy",                                    // arg.cpp:3404
	"LLAMA_ARG_VIDEO_FFMPEG_DIR":               "--video-ffmpeg-dir",                                                  // arg.cpp:2670
	"LLAMA_ARG_VIDEO_FPS":                      "--video-fps",                                                         // arg.cpp:2656
	"LLAMA_ARG_VIDEO_TIMESTAMP_INTERVAL":       "--video-timestamp-interval",                                          // arg.cpp:2663
	"LLAMA_ARG_YARN_ATTN_FACTOR":               "--yarn-attn-factor",                                                  // arg.cpp:2376
	"LLAMA_ARG_YARN_BETA_FAST":                 "--yarn-beta-fast",                                                    // arg.cpp:2390
	"LLAMA_ARG_YARN_BETA_SLOW":                 "--yarn-beta-slow",                                                    // arg.cpp:2383
	"LLAMA_ARG_YARN_EXT_FACTOR":                "--yarn-ext-factor",                                                   // arg.cpp:2369
	"LLAMA_ARG_YARN_ORIG_CTX":                  "--yarn-orig-ctx",                                                     // arg.cpp:2362
}

// llamaEnvWarnings is one warning line (without "bankml: ") for each variable of environ (os.Environ's
// "NAME=value" form) named LLAMA_ARG_*, in name order: bankml does not read it, and the flag it stands for
// when llamaEnv knows it (llama.cpp reads them before the command line, arg.cpp:784). Nothing else changes:
// the command runs as it would without the variable.
func llamaEnvWarnings(environ []string) []string {
	var names []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "LLAMA_ARG_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	lines := make([]string, 0, len(names))
	for _, name := range slices.Compact(names) {
		stands := ""
		if flag, ok := llamaEnv[name]; ok {
			stands = " (llama.cpp's " + flag + ")"
		}
		lines = append(lines, name+" is set: bankml does not read llama.cpp's environment variables"+stands+"; give the flag on the command line")
	}
	return lines
}
