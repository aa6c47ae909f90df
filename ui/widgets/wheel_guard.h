#pragma once
// The mouse wheel over a settings form scrolls the form. Qt's default gives the wheel to any
// combo box or spin box under the pointer, so scrolling the Training or Data page silently
// changed whatever setting passed under it (the optimizer, the learning rate...). Inside a scroll
// area, a combo box or spin box now takes the wheel only once it has focus (clicked or tabbed
// to); otherwise the wheel goes on to the scroll area.
class QObject;

namespace myelin::ui {

// Installs the guard on the application once (further calls do nothing); it covers widgets made
// later too. The guard is owned by the application.
void installWheelGuard();

} // namespace myelin::ui
