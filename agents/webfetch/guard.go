package webfetch

import (
	"fmt"
	"net/netip"
)

// RefusedError says an address may not be fetched. Its message is safe to
// show to the model ("refused: 127.0.0.1 is a loopback address").
type RefusedError struct {
	Addr   netip.Addr
	Reason string // "a loopback address", ...
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused: %s is %s", e.Addr, e.Reason)
}

var (
	cgnat      = netip.MustParsePrefix("100.64.0.0/10")
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")
	benchmark  = netip.MustParsePrefix("198.18.0.0/15")
	reserved   = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	ietf       = netip.MustParsePrefix("192.0.0.0/24")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
	// IPv4-compatible (::a.b.c.d, deprecated by RFC 4291) and
	// IPv4-translated (::ffff:0:a.b.c.d, RFC 2765) forms: Unmap does not
	// turn them into IPv4, and a host or translator may still reach the
	// embedded address ([::127.0.0.1] is the loopback on some stacks).
	v4Compatible = netip.MustParsePrefix("::/96")
	v4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// Refusal returns why a may not be dialled, or "" when it is a public
// address. IPv4-mapped IPv6 addresses are judged as the IPv4 address;
// NAT64, 6to4 and Teredo prefixes and the IPv4-compatible and
// IPv4-translated forms, which embed an IPv4 address a gateway or the
// host's stack would reach for us, are refused outright.
func Refusal(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not a valid address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata lives here)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case cgnat.Contains(a):
		return "a carrier-grade NAT address"
	case thisNet.Contains(a), benchmark.Contains(a), reserved.Contains(a), ietf.Contains(a):
		return "a reserved address"
	case nat64.Contains(a), nat64Local.Contains(a), sixToFour.Contains(a), teredo.Contains(a), v4Translated.Contains(a):
		return "a translated IPv4 address"
	case v4Compatible.Contains(a):
		return "an IPv4-compatible address"
	}
	return ""
}

func check(a netip.Addr, permit func(netip.Addr) bool) error {
	if permit != nil && permit(a) {
		return nil
	}
	if r := Refusal(a); r != "" {
		return &RefusedError{Addr: a.Unmap(), Reason: r}
	}
	return nil
}
