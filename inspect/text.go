package inspect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WriteText prints the report as text: a header line, the metadata, the tensors, the totals per type and the
// overall totals, each as an aligned table.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "file: %s: %d bytes, GGUF v%d, alignment %d, tensor data at byte %d\n",
		r.File, r.FileSize, r.Version, r.Alignment, r.DataOffset)
	fmt.Fprintf(bw, "architecture: %s", orDash(r.Architecture))
	if r.Name != "" {
		fmt.Fprintf(bw, ", name: %s", strconv.Quote(r.Name))
	}
	fmt.Fprintf(bw, ", %d layers\n", r.Layers)

	fmt.Fprintf(bw, "\nmetadata: %d keys\n", r.KVCount)
	meta := table{right: []bool{false, false, false}}
	for _, m := range r.Metadata {
		typ := m.Type
		if m.Len != nil {
			typ = fmt.Sprintf("%s × %d", m.Type, *m.Len)
		}
		meta.add(safe(m.Key), typ, textValue(m))
	}
	meta.write(bw)

	fmt.Fprintf(bw, "\ntensors: %d\n", r.TensorCount)
	if r.TensorCount > 0 {
		tens := table{right: []bool{false, false, false, true, true, true}}
		tens.add("name", "type", "shape", "elements", "offset", "bytes")
		for _, t := range r.Tensors {
			tens.add(safe(t.Name), t.Type, shape(t.Shape), itoa(t.Elements), utoa(t.Offset), utoa(t.Bytes))
		}
		tens.write(bw)
		fmt.Fprintf(bw, "  (offsets from the start of the tensor data, byte %d)\n", r.DataOffset)

		fmt.Fprintf(bw, "\ntotals per type:\n")
		tot := table{right: []bool{false, true, true, true, true}}
		tot.add("type", "tensors", "parameters", "bytes", "bits/weight")
		for _, t := range r.Types {
			tot.add(t.Type, strconv.Itoa(t.Tensors), itoa(t.Parameters), utoa(t.Bytes), ftoa(t.BitsPerWeight))
		}
		tot.add("all", strconv.Itoa(r.TensorCount), itoa(r.Parameters), utoa(r.TensorBytes), ftoa(r.BitsPerWeight))
		tot.write(bw)
	}
	fmt.Fprintf(bw, "\nparameters: %d (%s), %d bytes of tensors, %.4g bits per weight\n",
		r.Parameters, humanCount(r.Parameters), r.TensorBytes, r.BitsPerWeight)
	return bw.Flush()
}

// textValue renders a metadata value for the text form: strings quoted and cut, arrays as [a, b, …].
func textValue(m Meta) string {
	float := strings.TrimSuffix(strings.TrimPrefix(m.Type, "arr["), "]")
	raw := float == "f32" || float == "f64" // NaN and infinities are strings in JSON, bare words in text
	if m.Len == nil {
		return textScalar(m.Value, raw)
	}
	vals, _ := m.Value.([]any)
	parts := make([]string, 0, len(vals)+1)
	for _, v := range vals {
		if sub, ok := v.(map[string]any); ok {
			parts = append(parts, fmt.Sprintf("%v × %v", sub["type"], sub["len"]))
			continue
		}
		parts = append(parts, textScalar(v, raw))
	}
	if m.Truncated {
		parts = append(parts, "…")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// textScalar renders one scalar value; raw prints a string unquoted.
func textScalar(v any, raw bool) string {
	switch x := v.(type) {
	case string:
		if raw {
			return x
		}
		if len(x) > TextStringMax {
			cut := TextStringMax
			for cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			return strconv.Quote(x[:cut]) + fmt.Sprintf("… (%d bytes)", len(x))
		}
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// safe returns s, or s quoted when it holds anything but printable characters (a hostile name cannot break the
// table or the terminal).
func safe(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// shape renders dimensions as [a, b].
func shape(ne []int64) string {
	parts := make([]string, len(ne))
	for i, d := range ne {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// humanCount renders a count with a K/M/B suffix.
func humanCount(n int64) string {
	f := float64(n)
	switch {
	case f >= 1e9:
		return fmt.Sprintf("%.2f B", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.2f M", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.2f K", f/1e3)
	}
	return strconv.FormatInt(n, 10)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// table is a text table whose columns are padded to their widest cell (in runes), each aligned left or right.
type table struct {
	right []bool // per column: align right
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the rows indented by two spaces, columns two spaces apart, without trailing blanks.
func (t *table) write(w io.Writer) {
	width := make([]int, len(t.right))
	for _, row := range t.rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range t.rows {
		b.Reset()
		b.WriteString("  ")
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else if i < len(row)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
}

func itoa(n int64) string  { return strconv.FormatInt(n, 10) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
func ftoa(x float64) string {
	return strconv.FormatFloat(x, 'f', 4, 64)
}
