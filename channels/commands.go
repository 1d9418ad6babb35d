package channels

import (
	"strings"
	"time"
)

// Command is one chat command (SPEC §6.1) as platforms show it in their
// command menus and /help lists it. The catalogue (Commands) is the one
// place names and descriptions live: adapters register it as native
// commands (Telegram setMyCommands, Discord slash commands), the
// dispatcher recognises and documents the same list.
type Command struct {
	// Name is the command without '/', lower case ([a-z0-9_], at most 32).
	Name string
	// Usage is the argument syntax /help shows, e.g. "[model]"; "" when the
	// command takes none.
	Usage string
	// Description is one line of at most 100 characters (Discord's limit).
	Description string
	// Arg names the command's free-text argument in native menus (a
	// Discord option); "" when it takes none. ArgDescription describes it
	// and ArgRequired makes it mandatory.
	Arg            string
	ArgDescription string
	ArgRequired    bool
	// Private commands answer the caller only where the platform can
	// (Discord: an ephemeral reply); their replies show this session's
	// details.
	Private bool
	// Privileged commands change which session a shared chat uses: in
	// groups only allowed senders may run them.
	Privileged bool
	// Group commands are offered in group menus (all work in groups when
	// typed; the menu keeps the everyday ones).
	Group bool
}

// Commands returns the command catalogue in menu order (a fresh copy).
func Commands() []Command {
	return []Command{
		{Name: "new", Usage: "[model]", Description: "Start a new session (optionally with a model)",
			Arg: "args", ArgDescription: "a model such as openai/gpt-4o, and/or a first message",
			Privileged: true, Group: true},
		{Name: "reset", Description: "Start a new session", Privileged: true, Group: true},
		{Name: "status", Description: "Session key, id, model, tokens, compactions, queue mode",
			Private: true, Group: true},
		{Name: "stop", Description: "Cancel the running reply and queued messages", Group: true},
		{Name: "compact", Usage: "[instructions]", Description: "Summarise older history now",
			Arg: "instructions", ArgDescription: "what the summary should keep", Group: true},
		{Name: "queue", Usage: "<collect|followup|steer|interrupt|steer-backlog|queue> [debounce:1s cap:20 drop:summarize|old|new] | reset",
			Description: "Show or set how messages wait while a reply runs",
			Arg:         "settings", ArgDescription: "collect|followup|steer|interrupt|steer-backlog|queue [debounce:1s cap:20 drop:..] or reset",
			Group: true},
		{Name: "sessions", Description: "This chat's current and archived sessions", Private: true, Group: true},
		{Name: "history", Usage: "[n]", Description: "The last n messages (default 10)",
			Arg: "n", ArgDescription: "how many messages", Private: true, Group: true},
		{Name: "switch", Usage: "<n|sessionId>", Description: "Make an archived session current again",
			Arg: "session", ArgDescription: "its number in /sessions or its id", ArgRequired: true, Privileged: true},
		{Name: "delete", Usage: "[n]", Description: "Archive a session of this chat",
			Arg: "session", ArgDescription: "its number in /sessions (default: the current one)", Privileged: true},
		{Name: "usage", Description: "Tokens and cost of this session, and yours today", Private: true, Group: true},
		{Name: "model", Usage: "[name|default]", Description: "Show or switch this session's model",
			Arg: "name", ArgDescription: "a configured model such as openai/gpt-4o, or default", Privileged: true, Group: true},
		{Name: "think", Usage: "[off|low|medium|high|default]", Description: "Show or set this session's reasoning effort",
			Arg: "level", ArgDescription: "off, low, medium, high or default", Privileged: true, Group: true},
		{Name: "activation", Usage: "[mention|always|default]", Description: "Answer this group only when mentioned, or always",
			Arg: "mode", ArgDescription: "mention, always or default", Privileged: true, Group: true},
		{Name: "memory", Description: "What the bot keeps about you across sessions", Private: true, Group: true},
		{Name: "forget", Usage: "[n]", Description: "Erase what the bot keeps about you (or only note n)",
			Arg: "note", ArgDescription: "a note number from /memory (default: all of them)", Private: true, Group: true},
		{Name: "remind", Usage: "<when> <text> | list | cancel <id>",
			Description: "Remind this chat later (in 2 hours, tomorrow 09:00, every weekday 9:00)",
			Arg:         "args", ArgDescription: "when and what, e.g. tomorrow 09:00 stand-up; or list, cancel <id>",
			Group: true},
		{Name: "help", Description: "List the commands", Private: true, Group: true},
	}
}

// LookupCommand finds a command of the catalogue by name (without '/',
// any case).
func LookupCommand(name string) (Command, bool) {
	name = strings.ToLower(name)
	for _, c := range Commands() {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// HelpText lists cmds, one per line with their usage, as /help shows them.
func HelpText(cmds []Command) string {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, c := range cmds {
		b.WriteString("\n/" + c.Name)
		if c.Usage != "" {
			b.WriteString(" " + c.Usage)
		}
		b.WriteString(" – " + c.Description)
	}
	return b.String()
}

// Interaction is the platform interaction a message came in through (a
// Discord slash command). Its reply goes back through it while the token
// is valid, and as a normal channel message after Expires. It is carried
// by Inbound and by the Outbound built from it, and stored with both in
// the journal.
type Interaction struct {
	ID    string `json:"id"`
	AppID string `json:"appId"`
	// Token authorises the replies; it is never logged.
	Token string `json:"token"`
	// Private replies are shown to the caller only (Discord ephemeral).
	Private bool `json:"private,omitempty"`
	// Expires is when the token stops being usable.
	Expires time.Time `json:"expires"`
}

// Valid reports whether replies can still go through the interaction at now.
func (i *Interaction) Valid(now time.Time) bool {
	return i != nil && i.Token != "" && now.Before(i.Expires)
}
