package decode

// decimal is the text of a number read exactly: int columns and epoch
// times are computed from its digits, never through float64, whose 53 bits
// would turn 9007199254740993.0 into …992 and 1234567890123456789e0 into
// …768. The value is ±digits × 10^scale, where digits has no leading or
// trailing zeros (none at all for zero).
type decimal struct {
	neg         bool
	whole, frac []byte // the digits before and after the point, as written
	lo, hi      int    // the significant digits: positions in whole+frac
	scale       int64
}

// maxDecimalExp caps an exponent's magnitude; a bigger one saturates, which
// is far past anything an int64 or a timestamp holds, and keeps the scale
// arithmetic from overflowing.
const maxDecimalExp = 1 << 40

// parseDecimal reads -?D+(.D+)?([eE][+-]?D+)?, the JSON number grammar
// except that leading zeros are taken (numeric strings such as "007").
func parseDecimal(b []byte) (decimal, bool) {
	var d decimal
	p := 0
	if p < len(b) && b[p] == '-' {
		d.neg = true
		p++
	}
	start := p
	if p = digitRun(b, p); p == start {
		return d, false
	}
	d.whole = b[start:p]
	if p < len(b) && b[p] == '.' {
		fs := p + 1
		if p = digitRun(b, fs); p == fs {
			return d, false
		}
		d.frac = b[fs:p]
	}
	var exp int64
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		eneg := false
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			eneg = b[p] == '-'
			p++
		}
		es := p
		for p < len(b) && isDigit(b[p]) {
			if exp < maxDecimalExp {
				exp = exp*10 + int64(b[p]-'0')
			}
			p++
		}
		if p == es {
			return d, false
		}
		exp = min(exp, maxDecimalExp)
		if eneg {
			exp = -exp
		}
	}
	if p != len(b) {
		return d, false
	}
	n := len(d.whole) + len(d.frac)
	for d.lo < n && d.digit(d.lo) == '0' {
		d.lo++
	}
	d.hi = n
	for d.hi > d.lo && d.digit(d.hi-1) == '0' {
		d.hi--
	}
	d.scale = exp - int64(len(d.frac)) + int64(n-d.hi)
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitRun returns the end of the digits starting at p.
func digitRun(b []byte, p int) int {
	for p < len(b) && isDigit(b[p]) {
		p++
	}
	return p
}

// digit is the i-th digit of whole+frac.
func (d *decimal) digit(i int) byte {
	if i < len(d.whole) {
		return d.whole[i]
	}
	return d.frac[i-len(d.whole)]
}

func (d *decimal) zero() bool { return d.lo == d.hi }

// truncated describes the integer part of |d| × 10^shift: n digits, the
// first of them the significant digits, then zeros; exact is false when a
// nonzero fraction was dropped.
func (d *decimal) truncated(shift int64) (n int64, exact bool) {
	if d.zero() {
		return 0, true
	}
	s := d.scale + shift
	n = int64(d.hi-d.lo) + s
	return max(n, 0), s >= 0
}

// truncDigit is digit i of the integer part of |d| × 10^shift.
func (d *decimal) truncDigit(i int64) byte {
	if i < int64(d.hi-d.lo) {
		return d.digit(d.lo + int(i))
	}
	return '0'
}

// int64 is the value if it is an integer that fits an int64.
func (d *decimal) int64() (int64, bool) {
	n, exact := d.truncated(0)
	if !exact || n > 19 {
		return 0, false
	}
	var u uint64 // 19 digits always fit
	for i := range n {
		u = u*10 + uint64(d.truncDigit(i)-'0')
	}
	if d.neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to MinInt64, exactly
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// exactPow10 are the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float64 is the value when one IEEE operation makes it correctly rounded
// (Clinger's fast path, the one strconv.ParseFloat tries first): at most
// 15 significant digits, an integer below 2^53, times or over a power of
// ten that is itself exact. Logs' numbers (latencies, sizes, ratios)
// nearly all are; for the rest ok is false and strconv does the work.
func (d *decimal) float64() (f float64, ok bool) {
	if d.hi-d.lo > 15 || d.scale < -22 || d.scale > 22 {
		return 0, false
	}
	var m uint64
	for i := d.lo; i < d.hi; i++ {
		m = m*10 + uint64(d.digit(i)-'0')
	}
	f = float64(m)
	if d.scale < 0 {
		f /= exactPow10[-d.scale]
	} else {
		f *= exactPow10[d.scale]
	}
	if d.neg {
		f = -f
	}
	return f, true
}

// unix reads d as a count of units of 10^-digits seconds (0 for seconds,
// 3 for milliseconds, ...) and returns the whole seconds and nanoseconds,
// fractions below a nanosecond dropped. ok is false past ±10^12 seconds,
// far beyond the timestamp range.
func (d *decimal) unix(digits int64) (sec, nsec int64, ok bool) {
	n, _ := d.truncated(9 - digits) // in nanoseconds
	if n > 9+12 {
		return 0, 0, false
	}
	for i := range n {
		c := int64(d.truncDigit(i) - '0')
		if i < n-9 {
			sec = sec*10 + c
		} else {
			nsec = nsec*10 + c
		}
	}
	if d.neg {
		sec, nsec = -sec, -nsec
	}
	return sec, nsec, true
}
