package channels

// Quotes reports whether chunk i of the reply o shows itself as an answer
// to o.ReplyToID: the first chunk only (ReplyToFirst, the default), every
// chunk (ReplyToAll) or none (ReplyToOff).
func (o Outbound) Quotes(i int) bool {
	if o.ReplyToID == "" {
		return false
	}
	switch o.ReplyToMode {
	case ReplyToOff:
		return false
	case ReplyToAll:
		return true
	default:
		return i == 0
	}
}
