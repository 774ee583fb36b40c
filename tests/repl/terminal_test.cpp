// `posc repl` in a real terminal (a pseudo-terminal from forkpty): typing,
// history recall with the up arrow, editing with the left arrow and
// backspace, an error with its caret, and input after the error.
//
// libedit redraws a recalled line with cursor movements, so the test keeps
// a small model of the screen (printable characters, CR, LF, backspace and
// the cursor/erase escape sequences) and looks for text on it.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

namespace {

class Terminal {
 public:
  Terminal() {
    struct winsize size = {24, 100, 0, 0};
    pid_ = forkpty(&fd_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      setenv("TERM", "xterm", 1);
      setenv("POSC_HISTORY", "", 1);  // no history file
      setenv("NO_COLOR", "1", 1);
      execl(POSC_BINARY, "posc", "repl", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }

  // Types `keys` once the line editor is reading. libedit writes its prompt
  // and only then puts the terminal in raw mode; keys typed in between meet
  // the cooked line discipline, which turns Ctrl-D into an end-of-file record
  // that reads as a NUL once the mode is raw (libedit binds NUL to
  // quoted-insert, and the session stops responding to Ctrl-D). No person
  // types within that microsecond; a test can, so it waits until the
  // terminal (whose settings the master side reads too) is out of canonical
  // mode.
  void type(const std::string& keys) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    struct termios t {};
    while (tcgetattr(fd_, &t) == 0 && (t.c_lflag & ICANON) && std::chrono::steady_clock::now() < deadline)
      usleep(200);
    ASSERT_EQ(write(fd_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // Reads until `text` appears on the screen after `from` (or 10 s pass);
  // returns the position just after it, or npos. Lines end in '\n' and
  // have no trailing blanks.
  size_t waitFor(const std::string& text, size_t from) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      const std::string s = screen();
      size_t at = s.find(text, from);
      if (at != std::string::npos) return at + text.size();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::string::npos;
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return std::string::npos;  // the program ended
      for (ssize_t i = 0; i < n; ++i) feed(buf[i]);
    }
  }

  std::string screen() const {
    std::string out;
    for (const std::string& l : lines_) {
      size_t end = l.find_last_not_of(' ');
      out += (end == std::string::npos ? "" : l.substr(0, end + 1)) + "\n";
    }
    return out;
  }

  // The program's exit status, or -1 if it has not ended within 10 s (then
  // it is killed by the destructor). Output keeps being read meanwhile, so a
  // program blocked on a full terminal can still finish.
  int exitStatus() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[512];
        ssize_t n = read(fd_, buf, sizeof buf);
        for (ssize_t i = 0; i < n; ++i) feed(buf[i]);
      }
    }
    return -1;
  }
  std::string output() const { return screen(); }

 private:
  // The screen model: one string per line, a cursor, and escape parsing.
  void feed(char c) {
    if (!escape_.empty()) {
      escape_ += c;
      if (escape_.size() == 2 && c != '[') escape_.clear();  // ESC x: ignored
      else if (escape_.size() > 2 && c >= 0x40 && c <= 0x7e) {
        const std::string digits = escape_.substr(2, escape_.size() - 3);
        const int n = digits.empty() || digits[0] == '?' ? 1 : std::max(1, std::atoi(digits.c_str()));
        std::string& line = current();
        switch (c) {
          case 'G': col_ = static_cast<size_t>(n - 1); break;
          case 'C': col_ += static_cast<size_t>(n); break;
          case 'D': col_ -= std::min(col_, static_cast<size_t>(n)); break;
          case 'K': if (line.size() > col_) line.resize(col_); break;
          case 'P': if (line.size() > col_) line.erase(col_, static_cast<size_t>(n)); break;
          case '@': if (line.size() > col_) line.insert(col_, static_cast<size_t>(n), ' '); break;
          case 'A': row_ -= std::min(row_, static_cast<size_t>(n)); break;
          case 'B': row_ += static_cast<size_t>(n); break;
          default: break;  // colours, modes: no effect on the text
        }
        escape_.clear();
      }
      return;
    }
    if (c == '\x1b') escape_ = "\x1b";
    else if (c == '\r') col_ = 0;
    else if (c == '\n') ++row_;
    else if (c == '\b') col_ -= std::min<size_t>(col_, 1);
    else if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      std::string& line = current();
      if (line.size() <= col_) line.resize(col_ + 1, ' ');
      line[col_++] = c;
    }
  }
  std::string& current() {
    if (lines_.size() <= row_) lines_.resize(row_ + 1);
    return lines_[row_];
  }

  std::vector<std::string> lines_;
  size_t row_ = 0, col_ = 0;
  std::string escape_;
  int fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
};

TEST(ReplTerminal, HistoryEditingErrorsAndRecovery) {
#if !POSC_WITH_LIBEDIT
  GTEST_SKIP() << "posc was built without libedit: no line editing to test";
#endif
  Terminal t;
  ASSERT_TRUE(t.started());
  size_t at = t.waitFor("posc>", 0);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("k(d) = 2*d\r");
  at = t.waitFor("k(d) defined", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("k(3)\r");
  at = t.waitFor("\n6\n", at);
  ASSERT_NE(at, std::string::npos) << t.output();

  // Up arrow twice recalls the definition; three backspaces and "3*d" edit it.
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("\x1b[A\x1b[A");
  at = t.waitFor("k(d) = 2*d", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("\x7f\x7f\x7f" "3*d\r");
  at = t.waitFor("k(d) defined", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  // Up arrow twice recalls k(3); left arrow, backspace and 5 make it k(5).
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("\x1b[A\x1b[A");
  at = t.waitFor("k(3)", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("\x1b[D\x7f" "5\r");
  at = t.waitFor("\n15\n", at);
  ASSERT_NE(at, std::string::npos) << "the edited definition and call give 3 * 5:\n" << t.output();

  // An error: the caret sits under the second '*'.
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("k(d) = 3 * * d\r");
  at = t.waitFor("error: syntax error: unexpected '*'", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  at = t.waitFor("    k(d) = 3 * * d\n               ^\n", at);
  ASSERT_NE(at, std::string::npos) << t.output();

  // The session survives: the last good definition still holds.
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("k(7)\r");
  at = t.waitFor("\n21\n", at);
  ASSERT_NE(at, std::string::npos) << t.output();
  at = t.waitFor("posc>", at);  // type only at a prompt (the terminal is raw then)
  ASSERT_NE(at, std::string::npos) << t.output();
  t.type("\x04");  // Ctrl-D
  EXPECT_EQ(t.exitStatus(), 0) << t.output();
}

}  // namespace
