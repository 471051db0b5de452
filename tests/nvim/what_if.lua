-- Headless Neovim with the real nvim-dap plugin: the what-if helpers of docs/time-travel.md (setExpression at a
-- past stop, `branches` to list and switch) on $ND_PROGRAM (tests/test_what_if.py's scale.py). What
-- each stop says, the answers of evaluate and `branches`, and the output go to $ND_OUT as JSON.
vim.opt.runtimepath:prepend(os.getenv('ND_NVIM_DAP'))
local out = os.getenv('ND_OUT')

local dap = require('dap')
dap.adapters['neural-python'] = { type = 'executable', command = os.getenv('ND_NEURAL_DAP'), args = { 'adapter' } }
dap.configurations.python = {
  { type = 'neural-python', request = 'launch', name = 'neural-dap: time travel', program = '${file}', stopOnEntry = true },
}

-- docs/time-travel.md's helpers, as written there (tests/test_docs.py keeps them the same)
function _G.what_if(name, value)  -- :lua what_if('n', '5')
  local s = require('dap').session()
  s:request('setExpression', { expression = name, value = value, frameId = s.current_frame.id }, function(err)
    if err then vim.notify(err.message, vim.log.levels.ERROR) end
  end)
end
function _G.branches(id)  -- :lua branches() lists them, branches(0) goes back to the original run
  require('dap').session():request('branches', id and { switch = id } or {}, function(err, body)
    if err then vim.notify(err.message, vim.log.levels.ERROR) elseif not id then vim.print(body.branches) end
  end)
end

local result = { stops = {}, output = '', errors = {} }
local stopped, frames_seen = nil, 0
dap.listeners.after.event_stopped['nd-test'] = function(_, body) stopped = body end
dap.listeners.after.stackTrace['nd-test'] = function(_, err, response)
  if err or not response or not response.stackFrames[1] then return end
  frames_seen = frames_seen + 1
  local top = response.stackFrames[1]
  table.insert(result.stops, { reason = stopped.reason, description = stopped.description, line = top.line })
end
dap.listeners.after.event_output['nd-test'] = function(_, body)
  if body.category == 'stdout' then result.output = result.output .. body.output end
end

local function report()
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

local function stop_after(label, act)
  local before = frames_seen
  act()
  if not vim.wait(30000, function() return frames_seen > before end, 20) then
    error('no stop after ' .. label)
  end
end

local function ask(command, arguments)
  local session, answer = assert(dap.session()), nil
  session:request(command, arguments, function(e, response) answer = e and { error = e.message } or response end)
  vim.wait(20000, function() return answer ~= nil end, 20)
  return answer
end

local function evaluate(expression)
  local frame = assert(dap.session()).current_frame
  return ask('evaluate', { expression = expression, frameId = frame.id, context = 'repl' }).result
end

vim.schedule(function()
  local ok, err = pcall(function()
    stop_after('launch', function() dap.run(dap.configurations.python[1]) end)
    vim.api.nvim_win_set_cursor(0, { 12, 0 })
    dap.set_breakpoint()
    stop_after('continue', dap.continue)
    stop_after('step back', dap.step_back)
    stop_after('what_if', function() what_if('factor', '10') end)
    result.factor = evaluate('factor')
    stop_after('continue', dap.continue)
    result.result = evaluate('result')
    result.listed = ask('branches', {})
    stop_after('branches(0)', function() branches(0) end)
    result.original = evaluate('factor')
  end)
  if not ok then table.insert(result.errors, tostring(err)) end
  report()
end)
