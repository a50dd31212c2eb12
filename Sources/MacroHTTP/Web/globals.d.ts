// Types for the type checker only (tsc --checkJs, `make web-check`); not served. The page's
// scripts are classic scripts sharing one global scope: editor.js, then app.js, stats.js, debugger.js, history.js.

/** A progress channel of `/config.json`. */
interface Channel { name: string; min: number; max: number }

/** `/config.json`. */
interface DashboardConfig { channels: Channel[]; codemirror: boolean }

/** Where a macro file failed to load. */
interface LoadError { line?: number; column?: number; message: string; file?: string }

/** An entry of `macro.list`: a macro, a lib file (`kind: 'lib'`) or a resource (`kind: 'resource'`). */
interface MacroEntry {
  name: string; kind?: string; file: string; version: number; status: string;
  quarantined?: boolean; error?: LoadError | null;
  /** The files it imports and the files that import it (entry names). */
  imports?: string[]; importers?: string[];
  /** A lib file written as an ES module (imported, not shared as globals). */
  module?: boolean;
  /** A resource's size in bytes. */
  size?: number;
}

/** An entry of `macro.triggers`: a macro's triggers and what they did. */
interface TriggerStatus {
  name: string; mode: { mode: string; max?: number }; paused: string | null;
  running: number; queued: number; fired: number; dropped: number; failed: number;
  lastRun: { at: string; ms: number; ok: boolean; result: string } | null;
  triggers: { kind: string; spec: unknown; next: string | null; fired: number }[];
}

/** A JSON-RPC error (a rejected `rpc`), or a thrown `Error`: both have a message. */
interface RPCError {
  code?: number; message: string;
  data?: {
    file?: string; line?: number; column?: number; message?: string; errorName?: string;
    stack?: string; reason?: string;
  };
}

/** A `log` notification, or an entry of `log.recent`. */
interface LogRecord { level: string; message: string; time?: string; metadata?: Record<string, string> }

/** An entry of `macro.running`. */
interface RunningCall { call: number; name: string; elapsedMs: number }

/** `engine.status` (the fields the page shows). */
interface EngineStatus {
  calls: number; errors: number; connections: number; uptime: number; version: string; socket: string;
  javascript: string; paused?: string;
}

/** An entry of `macro.stats`. */
interface MacroStats {
  name: string; calls: number; ok: number; reloads: number; failedReloads: number;
  errors: { threw: number; timeout: number; cancelled: number; memory: number };
  p50Ms: number | null; p95Ms: number | null; p99Ms: number | null; maxMs: number | null; jsMs: number | null;
  lastError?: { kind: string; message: string; time: string } | null;
}

/** What each JSON-RPC method the page calls answers. */
interface RPCResults {
  'subscribe': unknown;
  'progress.get': Record<string, number>;
  'log.recent': LogRecord[];
  'macro.list': MacroEntry[];
  'macro.triggers': TriggerStatus[];
  'macro.source': { source: string };
  'macro.call': unknown;
  'macro.save': { file: string; version: number };
  'macro.delete': unknown;
  'macro.unquarantine': unknown;
  'macro.running': RunningCall[];
  'macro.cancel': unknown;
  'engine.status': EngineStatus;
  'macro.stats': MacroStats[];
  'macro.profile': { folded: string; samples: number; runs: number };
  'macro.history': MacroHistory;
  'macro.diff': MacroDiff;
  'macro.rollback': MacroRollback;
  'audit.recent': AuditEvent[];
  'store.get': StoreContents;
  'store.set': { name: string; key: string; bytes: number };
  'store.delete': { name: string; key: string; deleted: boolean };
  'run.list': RunSummary[];
  'run.get': RunRecord;
  'debug.start': { session: number; files: string[] };
  'debug.setBreakpoints': { breakpoints: { id: number; verified: boolean; line: number; column?: number; message?: string }[] };
  'debug.setExceptionBreakpoints': unknown;
  'debug.run': unknown;
  'debug.pause': unknown;
  'debug.terminate': unknown;
  'debug.request': any;
}

/** The editor behind editor.js: CodeMirror 5, or a textarea with line numbers. */
interface MacroSourceEditor {
  kind: 'codemirror' | 'plain';
  getValue(): string;
  setValue(text: string): void;
  focus(): void;
  markError(line: number, message: string): void;
  clearError(): void;
  errorLine(): number | null;
  /** The lines (1-based) with a breakpoint (a click in the gutter, or F9, toggles one). */
  breakpoints(): number[];
  setBreakpoints(lines: number[]): void;
  onBreakpointsChange(listener: (lines: number[]) => void): void;
  /** Highlights the line a debug session is stopped at (null: none). */
  showCurrentLine(line: number | null): void;
  currentLine(): number | null;
}

/** The part of CodeMirror 5's editor (Debian's libjs-codemirror) that editor.js uses. */
interface CodeMirrorEditor {
  getValue(): string;
  setValue(text: string): void;
  clearHistory(): void;
  focus(): void;
  lineCount(): number;
  setGutterMarker(line: number, gutter: string, marker: HTMLElement | null): unknown;
  addLineClass(line: number, where: string, className: string): unknown;
  removeLineClass(line: unknown, where: string, className: string): unknown;
  clearGutter(gutter: string): void;
  scrollIntoView(position: { line: number; ch: number }, margin?: number): void;
  lineInfo(line: number): { gutterMarkers?: Record<string, HTMLElement | undefined> | null } | null;
  getCursor(): { line: number; ch: number };
  on(event: string, handler: (...args: any[]) => void): void;
}

interface Window {
  /** CodeMirror 5's global, once editor.js has loaded /codemirror/lib/codemirror.js. */
  CodeMirror: (host: HTMLElement, options: Record<string, unknown>) => CodeMirrorEditor;
  /** editor.js: creates the page's editor. */
  MacroEditor: {
    create(container: HTMLElement, useCodeMirror: boolean, onSave: () => void): Promise<MacroSourceEditor>;
  };
  /** app.js's state, for the browser test (Tests/Browser/dashboard_check.py). */
  dashboard: unknown;
}

/** A kept version of `macro.history`. */
interface StoredVersion { version: number; hash: string; bytes: number; time: string; who: string }

/** `macro.history`: a file's kept versions, oldest first, and the one its file holds now. */
interface MacroHistory { name: string; file: string; versions: StoredVersion[]; current: number | null }

/** `macro.diff`: a unified diff from version `from` to version `to` (or the file now). */
interface MacroDiff { name: string; from: number; to: number | 'current'; diff: string }

/** `macro.rollback`: the version restored, and its number as the newest version. */
interface MacroRollback { name: string; file: string; restored: number; version: number | null; unchanged: boolean }

/** Who made an audited change. */
interface AuditActor { surface: 'socket' | 'dashboard' | 'file' | 'daemon' | 'signal'; uid?: number; pid?: number; session?: number }

/** An entry of `audit.recent`. */
interface AuditEvent {
  seq: number; time: string;
  kind: 'save' | 'rollback' | 'delete' | 'quarantine' | 'unquarantine' | 'configReload' | 'progressSet' | 'storeEdit';
  who: AuditActor; name?: string; before?: string; after?: string; version?: number; details?: Record<string, unknown>;
}

/** `store.get {name}`: a macro's store, its size and the limit. */
interface StoreContents { name: string; entries: Record<string, unknown>; bytes: number; limit: number }

/** An entry of `run.list`, and the params of `run.recorded`. */
interface RunSummary { id: number; call: number; macro: string; origin: string; started: string; ok: boolean | null; ms: number | null; error?: string }

/** `run.get`: one run whole. */
interface RunRecord {
  id: number; call: number; macro: string; version: string | null; origin: string; started: string; arguments: unknown[];
  result?: unknown; error?: { code: string; name?: string; message: string; file?: string; line?: number; column?: number; location?: string; stack?: string };
  console: { level: string; message: string }[];
  changes: { channel: string; from: number; to: number; kept: boolean }[];
  storeChanges: { key: string; from?: unknown; to?: unknown; kept: boolean }[];
  valuesBefore: Record<string, number>; storeBefore: Record<string, unknown> | null;
  timings: { totalMs: number; javascriptMs: number; turns: { atMs: number; ms: number }[] };
}
