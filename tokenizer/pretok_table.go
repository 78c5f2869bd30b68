package tokenizer

// The BPE pre-tokenizers of llama.cpp v0.5.0, by tokenizer.ggml.pre: the names llama_vocab::impl::load maps to each
// llama_vocab_pre_type with the flags it sets there (ignore_merges, add_bos, clean_spaces, a disabled default BOS),
// and the regular expressions llm_tokenizer_bpe's constructor lists for each type, character for character (the
// ones unicode_regex_split replaces with a hand-written splitter are matched by text, as it does).
//
// Left out, and refused by name: the pre-tokenizers that change more than the split (gemma4 and
// granite-embed-multi-311m, sarvam-moe: spaces escaped to U+2581, no byte encoding, <0xNN> byte tokens; whitespace:
// no byte encoding and its own normalizer).

// preName is one branch of load's tokenizer_pre chain.
type preName struct {
	names        []string
	kind         string // the llama_vocab_pre_type without its LLAMA_VOCAB_PRE_TYPE_ prefix
	ignoreMerges bool   // a word that is a token is not merged
	addBOS       bool   // the add_bos default (the GGUF key overrides it)
	cleanSpaces  bool   // clean_up_tokenization_spaces in detokenize
	noBOS        bool   // the default BOS (11) is disabled (the GGUF key still sets one)
}

// preRegexes holds the regex_exprs of every llama_vocab_pre_type that bankml implements.
var preRegexes = map[string][]string{
	"LLAMA3": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"JAIS2": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
	},
	"DBRX": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"SMAUG": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"DEEPSEEK_LLM": {
		"[\r\n]",
		"\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
		"\\s?[!-/:-~！-／：-～‘-‟\u3000-。]+",
		"\\s+$",
		"[一-龥ࠀ-一가-\ud7ff]+",
		"\\p{N}+",
	},
	"DEEPSEEK3_LLM": {
		"\\p{N}{1,3}",
		"[一-龥\u3040-ゟ゠-ヿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	},
	"HUNYUAN_DENSE": {
		"\\p{N}{1,3}",
		"[一-龥\u3040-ゟ゠-ヿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	},
	"JOYAI_LLM": {
		"\\p{N}{1,3}",
		"[一-龥\u3040-ゟ゠-ヿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	},
	"HY_V4": {
		"\\p{N}{1,3}",
		"[一-龥\u3040-ゟ゠-ヿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	},
	"SPARK2_5": {
		"\\p{N}{1,3}",
		"[一-龥\u3040-ゟ゠-ヿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
		"\\p{N}",
	},
	"YOUTU": {
		"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥\u3040-ゟ゠-ヿ]+",
		"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"DEEPSEEK_CODER": {
		"[\r\n]",
		"\\s?\\p{L}+",
		"\\s?\\p{P}+",
		"[一-龥ࠀ-一가-\ud7ff]+",
		"\\p{N}",
	},
	"FALCON": {
		"[\\p{P}\\$\\+<=>\\^~\\|`]+",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
		"[0-9][0-9][0-9]",
	},
	"STARCODER": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"REFACT": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"COMMAND_R": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"SMOLLM": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"CODESHELL": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"EXAONE": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"MINERVA": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"MELLUM2": {
		"\\p{N}",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"GPT2": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"MPT": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"OLMO": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"JAIS": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"TRILLION": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"GRANITE_DOCLING": {
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"STABLELM2": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"QWEN2": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"HUNYUAN": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"SOLAR_OPEN": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"QWEN35": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"PORO": {
		" ?[^(\\s|.,!?…。，、।۔،)]+",
	},
	"BLOOM": {
		" ?[^(\\s|.,!?…。，、।۔،)]+",
	},
	"GPT3_FINNISH": {
		" ?[^(\\s|.,!?…。，、।۔،)]+",
	},
	"CHATGLM4": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"VIKING": {
		" ?[^(\\s|.,!?…。，、।۔،)]+",
		"\\p{N}",
	},
	"TEKKEN": {
		"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"CHAMELEON": {
		"<sentinel:[0-9]+>",
		"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
		"([\\t\\n]|    |  )",
		"\\p{N}",
		"[\\p{P}!-/:-@\\[-`{-~]",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
	},
	"GPT4O": {
		"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"MINIMAX_M2": {
		"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"GRANITE_EMB_MULTI": {
		"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"TINY_AYA": {
		"\\d{1,3}(?=(?:\\d{3})*\\b)",
		"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"KIMI_K2": {
		"\\p{Han}+",
	},
	"SUPERBPE": {
		"\\p{N}+",
		"(?=(\\d{3})+(?!\\d))",
	},
	"BAILINGMOE": {
		"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
	},
	"SEED_CODER": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"UFAKZEKA": {
		"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"GROK_2": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"AFMOE": {
		"\\p{AFMoE_digits}",
		"[一-鿿㐀-䶿豈-\ufaff\u3040-ゟ゠-ヿ･-ﾟ⼀-\u2fdfเ-\u0e7f\u0e80-\u0effក-\u17ffက-႟ꩠ-ꩿꧠ-\ua9ff가-\ud7afᄀ-ᇿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"LAGUNA": {
		"[^\\n]+|[\\n]+",
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"EXAONE_MOE": {
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
	},
	"MINICPM5": {
		"\\p{N}{1,3}",
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	},
	"DEFAULT": {
		"[\\p{P}\\$\\+<=>\\^~\\|]+",
		"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
		"\\p{N}+",
		"[0-9][0-9][0-9]",
	},
}

// preNames lists load's names in its order; an empty tokenizer.ggml.pre is "default".
var preNames = []preName{
	{names: []string{"default"}, kind: "DEFAULT", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"minicpm5"}, kind: "MINICPM5", ignoreMerges: true, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}, kind: "LLAMA3", ignoreMerges: true, addBOS: true, cleanSpaces: true, noBOS: false},
	{names: []string{"deepseek-llm"}, kind: "DEEPSEEK_LLM", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"deepseek-coder"}, kind: "DEEPSEEK_CODER", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"deepseek-v3"}, kind: "DEEPSEEK3_LLM", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"spark2_5"}, kind: "SPARK2_5", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"youtu"}, kind: "YOUTU", ignoreMerges: true, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"falcon"}, kind: "FALCON", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"mpt"}, kind: "MPT", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"starcoder"}, kind: "STARCODER", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert"}, kind: "GPT2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"jais-2"}, kind: "JAIS2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"jina-v1-en", "jina-v2-code", "roberta-bpe"}, kind: "GPT2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"refact"}, kind: "REFACT", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"command-r"}, kind: "COMMAND_R", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"}, kind: "QWEN2", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"qwen35"}, kind: "QWEN35", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"stablelm2"}, kind: "STABLELM2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"olmo"}, kind: "OLMO", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"dbrx"}, kind: "DBRX", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"smaug-bpe"}, kind: "SMAUG", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"poro-chat"}, kind: "PORO", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"glm4", "chatglm-bpe"}, kind: "CHATGLM4", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: true},
	{names: []string{"viking"}, kind: "VIKING", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"jais"}, kind: "JAIS", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"tekken"}, kind: "TEKKEN", ignoreMerges: true, addBOS: true, cleanSpaces: false, noBOS: false},
	{names: []string{"smollm"}, kind: "SMOLLM", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"codeshell"}, kind: "CODESHELL", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"bloom"}, kind: "BLOOM", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"gpt3-finnish"}, kind: "GPT3_FINNISH", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"exaone"}, kind: "EXAONE", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"exaone4"}, kind: "GPT2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"exaone-moe"}, kind: "EXAONE_MOE", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"chameleon"}, kind: "CHAMELEON", ignoreMerges: false, addBOS: true, cleanSpaces: false, noBOS: false},
	{names: []string{"minerva-7b"}, kind: "MINERVA", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"megrez"}, kind: "QWEN2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
	{names: []string{"gpt-4o", "llama4", "kanana2", "talkie"}, kind: "GPT4O", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"granite-embed-multi-97m"}, kind: "GRANITE_EMB_MULTI", ignoreMerges: true, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"tiny_aya", "cohere2moe"}, kind: "TINY_AYA", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"superbpe"}, kind: "SUPERBPE", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"trillion"}, kind: "TRILLION", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"granite-docling"}, kind: "GRANITE_DOCLING", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"bailingmoe", "bailingmoe2", "llada-moe"}, kind: "BAILINGMOE", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"seed-coder"}, kind: "SEED_CODER", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"hunyuan"}, kind: "HUNYUAN", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"hunyuan-dense"}, kind: "HUNYUAN_DENSE", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"hy_v4"}, kind: "HY_V4", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"joyai-llm"}, kind: "JOYAI_LLM", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"kimi-k2"}, kind: "KIMI_K2", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"ufakzeka"}, kind: "UFAKZEKA", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"grok-2"}, kind: "GROK_2", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"afmoe"}, kind: "AFMOE", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"laguna"}, kind: "LAGUNA", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"minimax-m2"}, kind: "MINIMAX_M2", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"solar-open"}, kind: "SOLAR_OPEN", ignoreMerges: false, addBOS: false, cleanSpaces: false, noBOS: false},
	{names: []string{"mellum2"}, kind: "MELLUM2", ignoreMerges: false, addBOS: false, cleanSpaces: true, noBOS: false},
}

// refusedPres are the tokenizer.ggml.pre values llama.cpp knows that bankml does not implement, with the reason.
var refusedPres = map[string]string{
	"gemma4":                   "escapes spaces to U+2581 and uses <0xNN> byte tokens",
	"granite-embed-multi-311m": "escapes spaces to U+2581 and uses <0xNN> byte tokens",
	"sarvam-moe":               "escapes spaces to U+2581 and uses <0xNN> byte tokens",
	"whitespace":               "splits on white space without byte encoding",
}
