/**
 * A program in a real pseudo-terminal: tmux on a private socket runs it in a detached session of a fixed size;
 * `type` sends keys, `screen` reads what a person would see (scrollback included, wrapped lines joined).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { until } from './cliSupport';

export function hasTmux(): boolean {
  return spawnSync('tmux', ['-V']).status === 0;
}

function ps(): string {
  return spawnSync('ps', ['-eo', 'pid,ppid,stat,etime,args'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => /agent-sessions|temporal server/.test(l))
    .join('\n');
}

export class Terminal {
  private constructor(
    private readonly socket: string,
    private readonly name: string,
  ) {}

  /**
   * Starts `command` (a shell command line) in a new tmux session. The shell prints `[exited with N]` after it, and
   * the pane stays, so the last screen and the exit status can be read.
   */
  static start(socket: string, name: string, command: string, size = { columns: 110, rows: 50 }): Terminal {
    const t = new Terminal(socket, name);
    const line = `${command}; echo "[exited with $?]"`;
    t.tmux('new-session', '-d', '-s', name, '-x', String(size.columns), '-y', String(size.rows), line);
    t.tmux('set-option', '-t', name, 'remain-on-exit', 'on');
    t.tmux('set-option', '-t', name, 'history-limit', '10000');
    return t;
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }

  /** Types a line and presses Enter. */
  type(line: string): void {
    this.tmux('send-keys', '-t', this.name, '-l', line);
    this.tmux('send-keys', '-t', this.name, 'Enter');
  }

  /** The whole screen with its scrollback, as plain text (no colours), wrapped lines joined. */
  screen(): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', this.name);
  }

  /**
   * The exit status once the program has exited, else undefined. Read from the line the shell prints after it
   * (tmux's own pane_dead_status stays empty when tmux runs under the test runner).
   */
  exitStatus(): number | undefined {
    const m = /\[exited with (\d+)\]/.exec(this.screen());
    return m ? Number(m[1]) : undefined;
  }

  /** Waits until the screen satisfies `done`; returns that screen. */
  waitFor(done: (screen: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
    return until(() => this.screen(), done, `${what} on the screen`, Math.ceil(timeoutMs / 100), 100);
  }

  async waitForExit(what: string, timeoutMs = 30_000): Promise<number> {
    try {
      const status = await until(
        () => this.exitStatus(),
        (s) => s !== undefined,
        what,
        Math.ceil(timeoutMs / 100),
        100,
      );
      return status!;
    } catch (err) {
      throw new Error(
        `${(err as Error).message}\n--- screen ---\n${this.screen().trimEnd()}\n--- ps ---\n${ps()}`,
      );
    }
  }

  static killServer(socket: string): void {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
  }
}
