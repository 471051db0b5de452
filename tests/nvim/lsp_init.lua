-- Headless Neovim (0.11+) as a user configures it: neural-dap's language server for Python files,
-- inlay hints on. It opens the file, waits for the server's results and writes what the editor
-- received (inlay hints, code lenses, diagnostics) as JSON to $ND_OUT, then quits.
local python = os.getenv('ND_PYTHON')
local out = os.getenv('ND_OUT')

vim.lsp.config('neural_dap', {
  cmd = { python, '-m', 'neural_dap.cli.main', 'lsp' },
  filetypes = { 'python' },
  root_dir = function(_, on_dir) on_dir(vim.fn.getcwd()) end,
})
vim.lsp.enable('neural_dap')

-- A question the server asks (window/showMessageRequest: trust this folder?) is answered with
-- $ND_ANSWER, as a user picking that item would; headless, there is no one to ask.
local answer = os.getenv('ND_ANSWER')
if answer then
  vim.ui.select = function(items, opts, on_choice)
    for i, item in ipairs(items) do
      local text = opts and opts.format_item and opts.format_item(item) or (type(item) == 'table' and item.title) or item
      if text == answer then return on_choice(item, i) end
    end
    on_choice(nil, nil)
  end
end
vim.api.nvim_create_autocmd('LspAttach', {
  callback = function(args) vim.lsp.inlay_hint.enable(true, { bufnr = args.buf }) end,
})

local function report(result)
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

vim.schedule(function()
  local buf = vim.api.nvim_get_current_buf()
  local ok = vim.wait(30000, function() return #vim.lsp.get_clients({ bufnr = buf }) > 0 end, 50)
  if not ok then return report({ error = 'the language server did not attach' }) end
  vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
  -- $ND_NO_HINTS: none are expected (an untrusted folder); a short wait still lets any come
  local hint_wait = os.getenv('ND_NO_HINTS') and 2000 or 30000
  vim.wait(hint_wait, function() return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0 end, 50)
  local hints = {}
  for _, item in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
    local label = item.inlay_hint.label
    if type(label) == 'table' then
      local parts = {}
      for _, part in ipairs(label) do table.insert(parts, part.value) end
      label = table.concat(parts)
    end
    table.insert(hints, { line = item.inlay_hint.position.line + 1, label = label })
  end
  local lenses = {}
  local answers = vim.lsp.buf_request_sync(buf, 'textDocument/codeLens',
    { textDocument = vim.lsp.util.make_text_document_params(buf) }, 10000) or {}
  for _, answer in pairs(answers) do
    for _, lens in ipairs(answer.result or {}) do
      table.insert(lenses, { line = lens.range.start.line + 1, title = lens.command.title })
    end
  end
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(diagnostics, { line = d.lnum + 1, severity = d.severity, message = d.message })
  end
  report({ version = tostring(vim.version()), hints = hints, lenses = lenses, diagnostics = diagnostics })
end)
