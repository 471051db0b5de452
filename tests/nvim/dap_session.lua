-- Headless Neovim with the real nvim-dap plugin, configured by the README's block ($ND_CONFIG), debugging
-- $ND_PROGRAM the way a user does: the time-travel configuration, step keys, <F7> (step back) and
-- <S-F7> (reverse continue), a conditional breakpoint, evaluate, continue to the end. Every stop
-- (reason, frame name, line), the evaluate answer, the program's output and whether the session
-- terminated are written as JSON to $ND_OUT, then Neovim quits.
vim.opt.runtimepath:prepend(os.getenv('ND_NVIM_DAP'))
local out = os.getenv('ND_OUT')

-- the README's configuration (its block, with this checkout's neural-dap), as it stands there
dofile(os.getenv('ND_CONFIG'))
local dap = require('dap')

local result = { stops = {}, output = '', errors = {} }
local reason, frames_seen = nil, 0
dap.listeners.after.event_stopped['nd-test'] = function(_, body) reason = body.reason end
dap.listeners.after.stackTrace['nd-test'] = function(_, err, response)
  if err or not response or not response.stackFrames[1] then return end
  frames_seen = frames_seen + 1
  local top = response.stackFrames[1]
  table.insert(result.stops, { reason = reason, name = top.name, line = top.line })
end
dap.listeners.after.event_output['nd-test'] = function(_, body)
  if body.category ~= 'telemetry' then result.output = result.output .. body.output end
end
dap.listeners.after.event_terminated['nd-test'] = function() result.terminated = true end

local function report()
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

--- Do `act`, then wait for the next stop's stack (the editor's cursor moves on it).
local function stop_after(label, act)
  local before = frames_seen
  act()
  if not vim.wait(30000, function() return frames_seen > before end, 20) then
    table.insert(result.errors, 'no stop after ' .. label)
    report()
    error('no stop after ' .. label)
  end
  result.stops[#result.stops].after = label
end

local function key(keys)
  return function() vim.api.nvim_feedkeys(vim.keycode(keys), 'mx', false) end
end

vim.schedule(function()
  local ok, err = pcall(function()
    stop_after('launch', function() dap.run(dap.configurations.python[1]) end)
    stop_after('step over', dap.step_over)
    stop_after('step over', dap.step_over)
    stop_after('step into', dap.step_into)
    stop_after('step over', dap.step_over)
    stop_after('step over', dap.step_over)
    stop_after('step into', dap.step_into)
    stop_after('<F7>', key('<F7>'))
    stop_after('<F7>', key('<F7>'))
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    dap.set_breakpoint('x == 3')
    stop_after('continue', dap.continue)
    local session = assert(dap.session())
    local answered = false
    session:request('evaluate', { expression = 'x * 10', frameId = session.current_frame.id, context = 'repl' },
      function(e, response)
        result.evaluate = e and ('error: ' .. tostring(e.message or e)) or response.result
        answered = true
      end)
    vim.wait(10000, function() return answered end, 20)
    stop_after('<S-F7>', key('<S-F7>'))
    stop_after('continue', dap.continue)
    stop_after('continue', dap.continue)
    dap.continue()
    vim.wait(20000, function() return result.terminated == true end, 20)
  end)
  if not ok then table.insert(result.errors, tostring(err)) end
  report()
end)
