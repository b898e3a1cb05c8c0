(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E_ () (_ BitVec 16))
(declare-fun GA_ () Bool)
(declare-fun GP_ () (_ BitVec 15))
(declare-fun GZ_ () Bool)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GP_ (_ bv4096 15)))
(assert
 (bvsgt GP_ (_ bv28672 15)))
(assert
 (let (($x50 (= GP_ (_ bv0 15))))
 (=> GZ_ $x50)))
(assert
 (let ((?x64 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
(let ((?x65 ((_ sign_extend 3) ?x64)))
(let ((?x93 (bvsub E_ ?x65)))
(let ((?x97 ((_ zero_extend 35) (bvadd (ite (bvsgt (_ bv0 16) ?x93) (_ bv0 16) ?x93) (_ bv0 16)))))
(let ((?x85 ((_ zero_extend 17) (ite true (_ bv1 1) (_ bv0 1)))))
(let ((?x87 (bvmul ((_ zero_extend 3) (ite (bvslt GP_ (_ bv0 15)) (bvneg GP_) GP_)) (bvmul ?x85 ?x85))))
(let ((?x101 (bvlshr (bvshl ((_ zero_extend 33) ?x87) (_ bv33 51)) (ite (bvugt ?x97 (_ bv51 51)) (_ bv51 51) ?x97))))
(let ((?x102 ((_ zero_extend 5) ?x101)))
(let (($x75 (ite (= (_ bv0 15) GP_) GA_ (bvsgt (_ bv0 15) GP_))))
(let (($x76 (ite false true $x75)))
(let ((?x104 (ite (ite false false $x76) (bvsub (_ bv0 56) ?x102) ?x102)))
(let (($x115 (=> (bvsle (ite (or (or GZ_ false) false) (_ bv65397 16) ?x65) E_) (and (bvslt ?x104 (_ bv2251799813685248 56)) (bvsgt ?x104 (_ bv69805794224242688 56))))))
(let (($x55 (or (or GZ_ false) false)))
(let (($x71 (and (bvsge (ite $x55 (_ bv65397 16) ?x65) (_ bv65282 16)) (bvsle (ite $x55 (_ bv65397 16) ?x65) (_ bv254 16)))))
(let (($x116 (and (or $x71 (and $x55 (= ?x104 (_ bv0 56)) (= (ite $x55 (_ bv65397 16) ?x65) (_ bv65397 16)))) $x115)))
(not $x116)))))))))))))))))
(check-sat)
