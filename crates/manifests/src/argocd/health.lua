-- Argo CD health of an object of a kind a ctop operator defines, written by
-- `ctop manifests --argocd-health`. It reads what ctop's controller keeps on every such
-- object: the `Reconciled` condition (False with the error of the last reconcile),
-- `status.observedGeneration` (set by each reconcile that succeeds) and the `Ready`
-- condition (the children's health, or the script's own). Stalled and Reconciling are
-- read as kstatus reads them, as Flux does.
--
-- Lua 5.1 with the base and table libraries only: what Argo CD gives a health check.

local function find(conditions, kind)
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == kind then
      return c
    end
  end
  return nil
end

-- A string field as it is, anything else (absent, malformed) as "".
local function text(v)
  if type(v) == "string" then
    return v
  end
  return ""
end

-- "Reason: message", or whichever of the two the condition has.
local function describe(c)
  local reason = text(c.reason)
  local message = text(c.message)
  if reason ~= "" and message ~= "" then
    return reason .. ": " .. message
  elseif message ~= "" then
    return message
  end
  return reason
end

local function health(obj)
  local metadata = obj.metadata or {}
  local status = obj.status
  if type(status) ~= "table" then
    status = {}
  end
  local conditions = status.conditions
  if type(conditions) ~= "table" then
    conditions = {}
  end
  local generation = tonumber(metadata.generation)
  local observed = tonumber(status.observedGeneration)

  -- A condition written for an older spec than the object's says nothing about it.
  local function current(c)
    local seen = tonumber(c.observedGeneration)
    return generation == nil or seen == nil or seen >= generation
  end
  local function waiting()
    return "Progressing", "waiting for the operator to observe generation " .. generation
  end

  local reconciled = find(conditions, "Reconciled")
  local ready = find(conditions, "Ready")
  local stalled = find(conditions, "Stalled")
  local reconciling = find(conditions, "Reconciling")

  if metadata.deletionTimestamp ~= nil then
    if reconciled ~= nil and reconciled.status == "False" then
      return "Progressing", "being deleted; " .. describe(reconciled)
    end
    return "Progressing", "being deleted"
  end
  -- Before the generation: a failed reconcile leaves status.observedGeneration behind,
  -- and its Reconciled condition carries no observedGeneration of its own.
  if reconciled ~= nil and reconciled.status == "False" and current(reconciled) then
    return "Degraded", describe(reconciled)
  end
  if reconciled == nil and ready == nil and observed == nil then
    return "Progressing", "waiting for the first reconcile"
  end
  if generation ~= nil and (observed == nil or observed < generation) then
    return waiting()
  end
  if stalled ~= nil and stalled.status == "True" and current(stalled) then
    return "Degraded", describe(stalled)
  end
  if reconciling ~= nil and reconciling.status == "True" and current(reconciling) then
    return "Progressing", describe(reconciling)
  end
  if ready ~= nil then
    if not current(ready) then
      return waiting()
    elseif ready.status == "True" then
      if text(ready.message) ~= "" then
        return "Healthy", ready.message
      end
      return "Healthy", describe(ready)
    elseif ready.status == "False" and ready.reason == "ChildFailed" then
      return "Degraded", describe(ready)
    end
    return "Progressing", describe(ready)
  end
  if reconciled ~= nil and reconciled.status == "True" then
    return "Healthy", "reconciled"
  end
  return "Progressing", "waiting for the first reconcile"
end

local hs = {}
hs.status, hs.message = health(obj)
return hs
