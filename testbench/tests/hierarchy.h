#pragma once
// The SystemC hierarchy as tests see it: a block found by its hierarchical
// name, and whether anything below it is a process (the tables inside a
// pipeline stage are modules without processes: their owner's process calls
// them directly).
#include <string>
#include <systemc>

namespace incsim::test {

// The object of that hierarchical name as a T (an sc_module subclass), or null.
template <class T = sc_core::sc_module>
T* find_block(const std::string& name) {
  return dynamic_cast<T*>(sc_core::sc_find_object(name.c_str()));
}

// The processes at or below o, by kind (sc_method_process, sc_thread_process, sc_cthread_process).
inline int processes_below(const sc_core::sc_object* o) {
  int n = dynamic_cast<const sc_core::sc_process_b*>(o) ? 1 : 0;
  for (const sc_core::sc_object* c : o->get_child_objects()) n += processes_below(c);
  return n;
}

}  // namespace incsim::test
