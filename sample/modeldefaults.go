package sample

import (
	"math"
	"strconv"
	"strings"

	"github.com/bankml/bankml/gguf"
)

// MetaString returns a metadata value as llama.cpp's llama_model_meta_val_str
// gives it (gguf_kv_to_str): a string as stored (up to a NUL, as C's "%s"
// stops there), an integer in decimal, a float as std::to_string formats it
// (printf's "%f": six decimals), a bool as "true" or "false"; arrays are not
// kept (ok false), as llama.cpp skips them.
func MetaString(v gguf.Value) (s string, ok bool) {
	switch v.Type {
	case gguf.String:
		s, _ = v.String()
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return s, true
	case gguf.Bool:
		b, _ := v.Bool()
		return strconv.FormatBool(b), true
	case gguf.Float32, gguf.Float64:
		f, _ := v.Float64()
		return strconv.FormatFloat(f, 'f', 6, 64), true
	case gguf.Uint8, gguf.Uint16, gguf.Uint32, gguf.Uint64:
		u, _ := v.Uint64()
		return strconv.FormatUint(u, 10), true
	case gguf.Int8, gguf.Int16, gguf.Int32, gguf.Int64:
		i, _ := v.Int64()
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}

// The model keys llama.cpp reads sampling defaults from (LLM_KV_GENERAL_SAMPLING_*).
const (
	KeySamplingSequence = "general.sampling.sequence"
	keySamplingPrefix   = "general.sampling."
)

// ApplyModelDefaults sets p's defaults from a model's general.sampling.*
// metadata as common_init_sampler_from_model does when llama-server loads a
// model (every key the command line did not set; bankml serve sets none):
// sequence (names split on ';', see ParseSamplerNames), top_k, penalty_last_n
// and mirostat read with strtol from the value's string form, top_p, min_p,
// xtc_probability, xtc_threshold, temp, penalty_repeat, mirostat_tau and
// mirostat_eta with strtof, each from the first 63 (integers), 127 (floats)
// or 511 (sequence) bytes of that form, as llama.cpp's buffers hold. A value
// that does not parse is ignored, as in llama.cpp. It returns the sampler
// names of the sequence it did not know (llama.cpp drops them with a
// warning). Note the round trip: a float is formatted with six decimals and
// parsed back, so 0.1234567 becomes 0.123457.
func ApplyModelDefaults(p *Params, f *gguf.File) (unknown []string) {
	get := func(key string, size int) (string, bool) {
		v, ok := f.Get(key)
		if !ok {
			return "", false
		}
		s, ok := MetaString(v)
		if !ok || s == "" {
			return "", false
		}
		if len(s) > size-1 {
			s = s[:size-1]
		}
		return s, true
	}
	if s, ok := get(KeySamplingSequence, 512); ok {
		if names := strings.Split(s, ";"); len(names) > 0 {
			p.Samplers, unknown = ParseSamplerNames(names)
		}
	}
	for _, k := range []struct {
		key string
		dst *int32
	}{{"top_k", &p.TopK}, {"penalty_last_n", &p.PenaltyLastN}, {"mirostat", &p.Mirostat}} {
		if s, ok := get(keySamplingPrefix+k.key, 64); ok {
			if v, ok := strtol(s); ok {
				*k.dst = int32(v) // C's long to int32_t: the low 32 bits
			}
		}
	}
	for _, k := range []struct {
		key string
		dst *float32
	}{{"top_p", &p.TopP}, {"min_p", &p.MinP}, {"xtc_probability", &p.XTCProbability},
		{"xtc_threshold", &p.XTCThreshold}, {"temp", &p.Temp}, {"penalty_repeat", &p.PenaltyRepeat},
		{"mirostat_tau", &p.MirostatTau}, {"mirostat_eta", &p.MirostatEta}} {
		if s, ok := get(keySamplingPrefix+k.key, 128); ok {
			if v, ok := strtof(s); ok {
				*k.dst = v
			}
		}
	}
	return unknown
}

// strtol is C's strtol(s, &end, 10) with the "end != s" check: leading white
// space, an optional sign, decimal digits; out-of-range values saturate to
// the int64 range (glibc's long).
func strtol(s string) (int64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil { // out of range: strtol saturates
		if s[0] == '-' {
			return math.MinInt64, true
		}
		return math.MaxInt64, true
	}
	return v, true
}

// strtof is C's strtof(s, &end) with the "end != s" check for decimal input:
// leading white space, then the longest prefix that is a decimal number
// ([sign] digits [. digits] [e [sign] digits]), "inf", "infinity" or "nan",
// correctly rounded to float32 (as glibc's strtof). Hexadecimal floats are
// not recognised (none of llama.cpp's formatted values is one).
func strtof(s string) (float32, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	rest := strings.ToLower(s[i:])
	for _, w := range []string{"infinity", "inf", "nan"} {
		if strings.HasPrefix(rest, w) {
			v, err := strconv.ParseFloat(s[:i]+w, 32)
			return float32(v), err == nil
		}
	}
	j, digits := i, 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j, digits = j+1, digits+1
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j, digits = j+1, digits+1
		}
	}
	if digits == 0 {
		return 0, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			j = k
		}
	}
	v, err := strconv.ParseFloat(s[:j], 32)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return float32(v), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
