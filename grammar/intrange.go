package grammar

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// buildMinMaxInt is build_min_max_int (common/json-schema-to-grammar.cpp):
// a rule for the decimal integers in [minValue, maxValue], either bound
// absent when it is math.MinInt64 or math.MaxInt64. Arithmetic wraps as
// the reference's does on overflow. The error is the reference's exception
// when neither bound is set.
func buildMinMaxInt(minValue, maxValue int64, out *strings.Builder, decimalsLeft int, topLevel bool) error {
	hasMin := minValue != math.MinInt64
	hasMax := maxValue != math.MaxInt64

	digitRange := func(from, to byte) {
		out.WriteByte('[')
		if from == to {
			out.WriteByte(from)
		} else {
			out.WriteByte(from)
			out.WriteByte('-')
			out.WriteByte(to)
		}
		out.WriteByte(']')
	}
	moreDigits := func(minDigits, maxDigits int) {
		out.WriteString("[0-9]")
		if minDigits == maxDigits && minDigits == 1 {
			return
		}
		out.WriteByte('{')
		out.WriteString(strconv.Itoa(minDigits))
		if maxDigits != minDigits {
			out.WriteByte(',')
			if maxDigits != math.MaxInt32 {
				out.WriteString(strconv.Itoa(maxDigits))
			}
		}
		out.WriteByte('}')
	}
	var uniformRange func(from, to string)
	uniformRange = func(from, to string) {
		i := 0
		for i < len(from) && i < len(to) && from[i] == to[i] {
			i++
		}
		if i > 0 {
			out.WriteString(`"` + from[:i] + `"`)
		}
		if i < len(from) && i < len(to) {
			if i > 0 {
				out.WriteByte(' ')
			}
			subLen := len(from) - i - 1
			if subLen > 0 {
				fromSub, toSub := from[i+1:], to[i+1:]
				subZeros, subNines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
				toReached := false
				out.WriteByte('(')
				if fromSub == subZeros {
					digitRange(from[i], to[i]-1)
					out.WriteByte(' ')
					moreDigits(subLen, subLen)
				} else {
					out.WriteString("[" + string(from[i]) + "] ")
					out.WriteByte('(')
					uniformRange(fromSub, subNines)
					out.WriteByte(')')
					if from[i] < to[i]-1 {
						out.WriteString(" | ")
						if toSub == subNines {
							digitRange(from[i]+1, to[i])
							toReached = true
						} else {
							digitRange(from[i]+1, to[i]-1)
						}
						out.WriteByte(' ')
						moreDigits(subLen, subLen)
					}
				}
				if !toReached {
					out.WriteString(" | ")
					digitRange(to[i], to[i])
					out.WriteByte(' ')
					uniformRange(subZeros, toSub)
				}
				out.WriteByte(')')
			} else {
				out.WriteString("[" + string(from[i]) + "-" + string(to[i]) + "]")
			}
		}
	}

	if hasMin && hasMax {
		if minValue < 0 && maxValue < 0 {
			out.WriteString(`"-" (`)
			if err := buildMinMaxInt(-maxValue, -minValue, out, decimalsLeft, true); err != nil {
				return err
			}
			out.WriteByte(')')
			return nil
		}
		if minValue < 0 {
			out.WriteString(`"-" (`)
			if err := buildMinMaxInt(0, -minValue, out, decimalsLeft, true); err != nil {
				return err
			}
			out.WriteString(") | ")
			minValue = 0
		}
		minS, maxS := strconv.FormatInt(minValue, 10), strconv.FormatInt(maxValue, 10)
		for digits := len(minS); digits < len(maxS); digits++ {
			uniformRange(minS, strings.Repeat("9", digits))
			minS = "1" + strings.Repeat("0", digits)
			out.WriteString(" | ")
		}
		uniformRange(minS, maxS)
		return nil
	}

	lessDecimals := max(decimalsLeft-1, 1)

	if hasMin {
		switch {
		case minValue < 0:
			out.WriteString(`"-" (`)
			if err := buildMinMaxInt(math.MinInt64, -minValue, out, decimalsLeft, false); err != nil {
				return err
			}
			out.WriteString(") | [0] | [1-9] ")
			moreDigits(0, decimalsLeft-1)
		case minValue == 0:
			if topLevel {
				out.WriteString("[0] | [1-9] ")
				moreDigits(0, lessDecimals)
			} else {
				moreDigits(1, decimalsLeft)
			}
		case minValue <= 9:
			c := byte('0' + minValue)
			rangeStart := byte('0')
			if topLevel {
				rangeStart = '1'
			}
			if c > rangeStart {
				digitRange(rangeStart, c-1)
				out.WriteByte(' ')
				moreDigits(1, lessDecimals)
				out.WriteString(" | ")
			}
			digitRange(c, '9')
			out.WriteByte(' ')
			moreDigits(0, lessDecimals)
		default:
			minS := strconv.FormatInt(minValue, 10)
			n := len(minS)
			c := minS[0]
			if c > '1' {
				start := byte('0')
				if topLevel {
					start = '1'
				}
				digitRange(start, c-1)
				out.WriteByte(' ')
				moreDigits(n, lessDecimals)
				out.WriteString(" | ")
			}
			digitRange(c, c)
			out.WriteString(" (")
			rest, _ := strconv.ParseInt(minS[1:], 10, 64)
			if err := buildMinMaxInt(rest, math.MaxInt64, out, lessDecimals, false); err != nil {
				return err
			}
			out.WriteByte(')')
			if c < '9' {
				out.WriteString(" | ")
				digitRange(c+1, '9')
				out.WriteByte(' ')
				moreDigits(n-1, lessDecimals)
			}
		}
		return nil
	}

	if hasMax {
		if maxValue >= 0 {
			if topLevel {
				out.WriteString(`"-" [1-9] `)
				moreDigits(0, lessDecimals)
				out.WriteString(" | ")
			}
			return buildMinMaxInt(0, maxValue, out, decimalsLeft, true)
		}
		out.WriteString(`"-" (`)
		if err := buildMinMaxInt(-maxValue, math.MaxInt64, out, decimalsLeft, false); err != nil {
			return err
		}
		out.WriteByte(')')
		return nil
	}

	//lint:ignore ST1005 the reference's exception text, which the converter's error quotes
	return errors.New("At least one of min_value or max_value must be set")
}
