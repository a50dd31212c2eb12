'use strict';

window.MacroEditor = (() => {
  /**
   * Adds a `<link>` or `<script>` to the page's head; resolves once it has loaded.
   * @param {string} tag
   * @param {Record<string, string>} attributes
   * @returns {Promise<HTMLElement>}
   */
  function load(tag, attributes) {
    return new Promise((resolve, reject) => {
      const element = document.createElement(tag);
      Object.entries(attributes).forEach(([key, value]) => element.setAttribute(key, value));
      element.addEventListener('load', () => resolve(element));
      element.addEventListener('error', () => reject(new Error('cannot load ' + (attributes.src || attributes.href))));
      document.head.appendChild(element);
    });
  }

  /**
   * @param {HTMLElement} container
   * @param {() => void} onSave
   * @returns {Promise<MacroSourceEditor>}
   */
  async function codeMirror(container, onSave) {
    await load('link', { rel: 'stylesheet', href: '/codemirror/lib/codemirror.css' });
    await load('script', { src: '/codemirror/lib/codemirror.js' });
    await load('script', { src: '/codemirror/mode/javascript/javascript.js' });
    const cm = window.CodeMirror(container, {
      value: '', mode: 'javascript', lineNumbers: true, indentUnit: 4, tabSize: 4,
      gutters: ['breakpoints', 'CodeMirror-linenumbers', 'error-gutter'],
      extraKeys: {
        'Ctrl-S': () => onSave(), 'Cmd-S': () => onSave(), Tab: false, 'Shift-Tab': false,
        F9: () => toggle(cm.getCursor().line),
      },
      screenReaderLabel: 'Macro source',
    });
    /** @type {unknown} the line handle of the marked line */
    let marked = null;
    /** @type {unknown} the line handle of the debugger's current line */
    let current = null;
    /** @type {(lines: number[]) => void} */
    let breakpointsChanged = () => {};
    /** The lines (1-based) with a breakpoint marker: markers move with the text. */
    function breakpointLines() {
      /** @type {number[]} */
      const lines = [];
      for (let index = 0; index < cm.lineCount(); index++) {
        const info = cm.lineInfo(index);
        if (info && info.gutterMarkers && info.gutterMarkers.breakpoints) lines.push(index + 1);
      }
      return lines;
    }
    /** @param {number} index 0-based @param {boolean} on */
    function mark(index, on) {
      let marker = null;
      if (on) {
        marker = document.createElement('span');
        marker.className = 'breakpoint-marker';
        marker.textContent = '●';
        marker.title = `Breakpoint on line ${index + 1}`;
        marker.setAttribute('role', 'img');
        marker.setAttribute('aria-label', marker.title);
      }
      cm.setGutterMarker(index, 'breakpoints', marker);
    }
    /** @param {number} index 0-based */
    function toggle(index) {
      mark(index, !breakpointLines().includes(index + 1));
      breakpointsChanged(breakpointLines());
    }
    cm.on('gutterClick', (/** @type {unknown} */ _cm, /** @type {number} */ line, /** @type {string} */ gutter) => {
      if (gutter === 'breakpoints' || gutter === 'CodeMirror-linenumbers') toggle(line);
    });
    return {
      kind: 'codemirror',
      breakpoints: () => breakpointLines(),
      setBreakpoints(/** @type {number[]} */ lines) {
        cm.clearGutter('breakpoints');
        for (const line of lines) if (line >= 1 && line <= cm.lineCount()) mark(line - 1, true);
      },
      onBreakpointsChange(/** @type {(lines: number[]) => void} */ listener) { breakpointsChanged = listener; },
      showCurrentLine(/** @type {number | null} */ line) {
        if (current) { cm.removeLineClass(current, 'background', 'debug-current'); current = null; }
        if (line === null) return;
        const index = Math.max(0, Math.min(line - 1, cm.lineCount() - 1));
        current = cm.addLineClass(index, 'background', 'debug-current');
        cm.scrollIntoView({ line: index, ch: 0 }, 60);
      },
      currentLine() {
        const wrapper = container.querySelector('.debug-current');
        const line = wrapper && wrapper.parentElement ? wrapper.parentElement.querySelector('.CodeMirror-linenumber') : null;
        return line ? Number(line.textContent) : null;
      },
      getValue: () => cm.getValue(),
      setValue: (/** @type {string} */ text) => { cm.setValue(text); cm.clearHistory(); },
      focus: () => cm.focus(),
      /** @this {MacroSourceEditor} @param {number} line @param {string} message */
      markError(line, message) {
        this.clearError();
        const index = Math.max(0, Math.min(line - 1, cm.lineCount() - 1));
        const marker = document.createElement('span');
        // Not a breakpoint's dot: a "!" of its own shape and colours, named for what it marks.
        marker.className = 'error-marker';
        marker.textContent = '!';
        marker.title = `Error on line ${index + 1}: ${message}`;
        marker.setAttribute('role', 'img');
        marker.setAttribute('aria-label', marker.title);
        cm.setGutterMarker(index, 'error-gutter', marker);
        marked = cm.addLineClass(index, 'wrap', 'error-line');
        cm.scrollIntoView({ line: index, ch: 0 }, 60);
      },
      clearError() {
        if (marked) { cm.removeLineClass(marked, 'wrap', 'error-line'); marked = null; }
        cm.clearGutter('error-gutter');
      },
      errorLine() {
        const wrapper = container.querySelector('.error-line .CodeMirror-linenumber');
        return wrapper ? Number(wrapper.textContent) : null;
      },
    };
  }

  /**
   * @param {HTMLElement} container
   * @param {() => void} onSave
   * @returns {MacroSourceEditor}
   */
  function plain(container, onSave) {
    const frame = document.createElement('div');
    frame.className = 'plain-editor';
    const gutter = document.createElement('ol');
    gutter.className = 'gutter';
    gutter.setAttribute('aria-hidden', 'true');
    const area = document.createElement('textarea');
    area.spellcheck = false;
    area.setAttribute('aria-label', 'Macro source');
    area.setAttribute('autocapitalize', 'off');
    frame.append(gutter, area);
    container.appendChild(frame);
    /** @type {number | null} the marked line */
    let errorAt = null;
    /** @type {Set<number>} lines with a breakpoint */
    const breaks = new Set();
    /** @type {number | null} the debugger's current line */
    let currentAt = null;
    /** @type {(lines: number[]) => void} */
    let breakpointsChanged = () => {};
    const sorted = () => Array.from(breaks).sort((a, b) => a - b);
    /** @param {number} line */
    function toggle(line) {
      if (breaks.has(line)) breaks.delete(line); else breaks.add(line);
      numbers();
      breakpointsChanged(sorted());
    }
    gutter.addEventListener('click', (event) => {
      const item = /** @type {HTMLElement} */ (event.target);
      if (item.tagName === 'LI') toggle(Array.prototype.indexOf.call(gutter.children, item) + 1);
    });
    function numbers() {
      const count = area.value.split('\n').length;
      while (gutter.children.length < count) {
        const item = document.createElement('li');
        item.textContent = String(gutter.children.length + 1);
        gutter.appendChild(item);
      }
      while (gutter.children.length > count) gutter.children[gutter.children.length - 1].remove();
      if (errorAt && gutter.children[errorAt - 1]) gutter.children[errorAt - 1].classList.add('error-line');
      Array.from(gutter.children).forEach((item, index) => {
        item.classList.toggle('breakpoint', breaks.has(index + 1));
        item.classList.toggle('debug-current', currentAt === index + 1);
      });
      gutter.scrollTop = area.scrollTop;
    }
    area.addEventListener('input', numbers);
    area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
    area.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === 's') { event.preventDefault(); onSave(); }
      if (event.key === 'F9') { event.preventDefault(); toggle(area.value.slice(0, area.selectionStart).split('\n').length); }
    });
    numbers();
    return {
      kind: 'plain',
      breakpoints: () => sorted(),
      setBreakpoints(/** @type {number[]} */ lines) { breaks.clear(); lines.forEach((line) => breaks.add(line)); numbers(); },
      onBreakpointsChange(/** @type {(lines: number[]) => void} */ listener) { breakpointsChanged = listener; },
      showCurrentLine(/** @type {number | null} */ line) {
        currentAt = line;
        numbers();
        const item = line ? /** @type {HTMLElement | undefined} */ (gutter.children[line - 1]) : undefined;
        if (item) area.scrollTop = item.offsetTop - 40;
      },
      currentLine: () => currentAt,
      getValue: () => area.value,
      setValue: (/** @type {string} */ text) => { area.value = text; numbers(); },
      focus: () => area.focus(),
      /** @this {MacroSourceEditor} @param {number} line @param {string} message */
      markError(line, message) {
        this.clearError();
        errorAt = line;
        numbers();
        const item = /** @type {HTMLElement | undefined} */ (gutter.children[line - 1]);
        if (item) { item.title = `Error on line ${line}: ${message}`; area.scrollTop = item.offsetTop - 40; }
      },
      clearError() {
        errorAt = null;
        Array.from(/** @type {NodeListOf<HTMLElement>} */ (gutter.querySelectorAll('.error-line'))).forEach((item) => { item.classList.remove('error-line'); item.title = ''; });
      },
      errorLine: () => errorAt,
    };
  }

  return {
    /** Creates the editor in `container`: CodeMirror when `useCodeMirror` and it loads, else plain. */
    async create(container, useCodeMirror, onSave) {
      if (useCodeMirror) {
        try { return await codeMirror(container, onSave); } catch (error) { container.textContent = ''; }
      }
      return plain(container, onSave);
    },
  };
})();
