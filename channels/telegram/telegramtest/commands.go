package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
)

// BotCommand is one entry of a command menu.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// MyCommands is one setMyCommands call: the menu set for a scope.
type MyCommands struct {
	// Scope is the BotCommandScope type ("default" when none was sent),
	// e.g. all_private_chats, all_group_chats.
	Scope        string
	LanguageCode string
	Commands     []BotCommand
}

// myCommands serves setMyCommands (recorded; validated as the Bot API
// does), getMyCommands (the menu last set for the scope) and
// deleteMyCommands.
func (s *Server) myCommands(w http.ResponseWriter, r *http.Request, method string) {
	scope := "default"
	if raw := r.Form.Get("scope"); raw != "" {
		var sc struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(raw), &sc); err != nil || sc.Type == "" {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse BotCommandScope JSON object"})
			return
		}
		scope = sc.Type
	}
	lang := r.Form.Get("language_code")
	switch method {
	case "getMyCommands":
		s.mu.Lock()
		var cmds []BotCommand
		for _, c := range s.commands {
			if c.Scope == scope && c.LanguageCode == lang {
				cmds = c.Commands
			}
		}
		s.mu.Unlock()
		if cmds == nil {
			cmds = []BotCommand{}
		}
		writeOK(w, cmds)
		return
	case "deleteMyCommands":
		s.record(MyCommands{Scope: scope, LanguageCode: lang, Commands: []BotCommand{}})
		writeOK(w, true)
		return
	}
	var cmds []BotCommand
	if err := json.Unmarshal([]byte(r.Form.Get("commands")), &cmds); err != nil {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: can't parse commands JSON object"})
		return
	}
	if len(cmds) > 100 {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: too many commands"})
		return
	}
	for _, c := range cmds {
		if !validCommand(c.Command) {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: BOT_COMMAND_INVALID"})
			return
		}
		if n := len([]rune(c.Description)); n < 1 || n > 256 {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: command description is empty or too long"})
			return
		}
	}
	s.record(MyCommands{Scope: scope, LanguageCode: lang, Commands: cmds})
	writeOK(w, true)
}

// validCommand is the Bot API's rule: 1-32 characters of a-z, 0-9 and _.
func validCommand(c string) bool {
	if len(c) < 1 || len(c) > 32 {
		return false
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Server) record(c MyCommands) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = append(s.commands, c)
	s.notifyLocked()
}

// MyCommands returns every setMyCommands (and deleteMyCommands, with no
// commands) call so far, in order.
func (s *Server) MyCommands() []MyCommands {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]MyCommands(nil), s.commands...)
}

// WaitMyCommands waits until at least n menus were set and returns them all.
func (s *Server) WaitMyCommands(ctx context.Context, n int) ([]MyCommands, error) {
	err := s.wait(ctx, func() bool { return len(s.commands) >= n })
	return s.MyCommands(), err
}
