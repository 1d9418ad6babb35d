package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Sender identities (channels.web.senderIdentity): who a web chat message
// is from, for the per-sender limits. A web chat's SenderID is its
// conversation (one per session, and a new chat is a new one), so limits
// keyed by it bind a session, not a person: the identity is what binds.
const (
	// IdentityToken: everyone who presents the API token is one sender
	// ("token-<8 hex of its SHA-256>", or "token-none" on a loopback
	// listener without a token). No client can shed it; people sharing a
	// token share its limits. The default.
	IdentityToken = "token"
	// IdentityCookie: each browser is a sender, named by a random id in a
	// cookie signed with a key kept in the state directory ("browser-<id>").
	// A request without a valid cookie gets a new one: a client that drops
	// its cookies is a new sender (it binds browsers, not a hostile script).
	IdentityCookie = "cookie"
	// IdentityAddress: each client address is a sender ("addr-<ip>", an
	// IPv6 address by its /64, which one host usually holds). Behind a
	// reverse proxy every client has the proxy's address.
	IdentityAddress = "address"
)

// CookieName is the sender cookie of IdentityCookie.
const CookieName = "gateway_sender"

// cookieMaxAge is how long a browser keeps its sender cookie (a year).
const cookieMaxAge = 365 * 24 * 3600

// Identity names the sender of a chat request. Build it with NewIdentity.
type Identity struct {
	mode  string
	token string // IdentityToken: the sender id
	key   []byte // IdentityCookie: the HMAC key
}

// NewIdentity returns the identity of mode (IdentityToken, IdentityCookie
// or IdentityAddress): apiToken is http.token ("" when none), key the
// cookie-signing key (at least 32 bytes; IdentityCookie only).
func NewIdentity(mode, apiToken string, key []byte) (*Identity, error) {
	switch mode {
	case IdentityToken:
		id := "token-none"
		if apiToken != "" {
			sum := sha256.Sum256([]byte(apiToken))
			id = "token-" + hex.EncodeToString(sum[:4])
		}
		return &Identity{mode: mode, token: id}, nil
	case IdentityCookie:
		if len(key) < 32 {
			return nil, fmt.Errorf("web: sender identity cookie: key of %d bytes, want at least 32", len(key))
		}
		return &Identity{mode: mode, key: key}, nil
	case IdentityAddress:
		return &Identity{mode: mode}, nil
	}
	return nil, fmt.Errorf("web: sender identity %q: want token, cookie or address", mode)
}

// Of returns the sender of r. In cookie mode it sets a new signed cookie
// on w when r carries none that is valid: call it before writing anything.
func (i *Identity) Of(w http.ResponseWriter, r *http.Request) string {
	switch i.mode {
	case IdentityToken:
		return i.token
	case IdentityAddress:
		return addressOf(r.RemoteAddr)
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if id, ok := i.verify(c.Value); ok {
			return "browser-" + id
		}
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id + "." + i.sign(id), Path: "/api/",
		MaxAge: cookieMaxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return "browser-" + id
}

func (i *Identity) sign(id string) string {
	m := hmac.New(sha256.New, i.key)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// verify checks a cookie value "<id>.<mac>" and returns its id.
func (i *Identity) verify(v string) (string, bool) {
	id, mac, ok := strings.Cut(v, ".")
	if !ok || len(id) != 22 {
		return "", false
	}
	return id, hmac.Equal([]byte(mac), []byte(i.sign(id)))
}

// addressOf is the sender of a client address (host:port).
func addressOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return "addr-" + host
	case ip.To4() != nil:
		return "addr-" + ip.To4().String()
	}
	return "addr-" + ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
